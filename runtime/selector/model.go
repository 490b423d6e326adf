package selector

import (
	_ "embed"
	"fmt"
	"math"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Class is a kind of link between two ranks.
type Class int

const (
	// Shm links ranks of one server (shared memory).
	Shm Class = iota
	// Net links ranks of different servers (TCP).
	Net
	numClasses
)

func (c Class) String() string {
	switch c {
	case Shm:
		return "shm"
	case Net:
		return "net"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// LinkCost is the alpha-beta cost of one link class.
type LinkCost struct {
	Alpha time.Duration // per message: wake-up, headers, syscalls
	// Beta is the time per byte, in seconds (the inverse bandwidth).
	Beta float64
	// Parallel is how many channels the class can serve at full speed each
	// (more channels than that only split the same bandwidth).
	Parallel int
}

// Model is the cost model. The zero value is useless; start from
// DefaultModel and override what a tuning file says. Durations are per
// event, the float64 costs seconds per byte; docs/selector.md#the-cost-model
// says what each term prices and #the-constants where each value comes from.
type Model struct {
	Links [numClasses]LinkCost
	// Gamma is the time per byte of one input reduced, in seconds.
	Gamma float64
	// Copy is the time per byte copied locally, in seconds.
	Copy float64
	// Step is the fixed cost of a step that only does local work, and of
	// posting a message.
	Step time.Duration
	// Handoff is the cost of each receive of a step beyond the first
	// (mesh, one-shot and pairwise receive from several peers at once)
	// when ranks outnumber cores: the executor hands it to a worker
	// goroutine, and with no idle core that means waiting for a turn. A
	// step's sends that fit go out inline, without a worker, so a mesh
	// Broadcast's root pays none. With a core per rank, Step covers it.
	Handoff time.Duration
	// PollMax is the largest transfer whose receive pays no Handoff: the
	// executor polls a step's receives of one frame on its calling
	// goroutine (runtime/executor/arrived.go) and hands only longer ones
	// to workers. It sits below the poll's bound in the code: with more
	// ranks than cores a polled receive of tens of KiB still waits for
	// its peer's turn on a core (docs/selector.md#shared-cores).
	PollMax int64

	// Cores is how many cores a server's ranks share; 0 means as many as
	// ranks. With more ranks than cores on a server, byte work is slowed
	// by the ranks at work over Cores (all of them for most algorithms;
	// fewer for a tree's rounds and rhd's fold, shape.busy) and a
	// dependent round over shm costs Wake instead of
	// the shm alpha: waiting ranks sleep in a futex instead of spinning.
	Cores int
	Wake  time.Duration
	// Slow replaces Wake and PollMax on a host whose shared core changes
	// hands slowly (WithHandoff).
	Slow SlowHost
	// Crowd is what each dependent round over shm and each message cost
	// for every CrowdFrom-th rank at work per core beyond the first
	// CrowdFrom, when ranks outnumber cores: a round moves once every
	// rank at work has had its turn on a core, and a message wakes a
	// sleeping receiver, so on a crowded host both grow with the crowd
	// (ranks at work over cores). Wake and Handoff cover hosts of up to
	// CrowdFrom ranks per core; this is the rest, which makes an
	// algorithm of many messages (mesh, one-shot) or many rounds (ring)
	// lose to one of few (dissemination, rhd) at 64 ranks on 2 cores. A
	// job that measured its host's hand-off prices with that
	// (WithHandoff; docs/selector.md#the-crowd).
	Crowd     time.Duration
	CrowdFrom float64
	// Exchange is how many times dearer the bytes of an exchange round
	// over shm (rhd: both ways with one partner at once) are when ranks
	// outnumber cores: the round moves only while both partners hold a
	// core. 1 (or 0) charges them as any other bytes.
	Exchange float64
	// NetWake is what each message received over the net class on the
	// critical path costs, times ranks/Cores, when ranks outnumber
	// cores: the receiver waits for it parked in Go's network poller
	// (a socket cannot be polled across ranks the way shm is), and its
	// wake-up waits for a core, whatever the algorithm
	// (docs/selector.md#tcp-on-shared-cores).
	NetWake time.Duration
	// NetWakeOthers is the share of a NetWake that each receive of a
	// step beyond its first pays (the receives counted as hand-offs)
	// over TCP alone: the rank parks on the first, and by the time it
	// holds a core again the others have mostly arrived. Counted whole,
	// it priced mesh (two rounds of two receives at np 3) as ring (four
	// rounds of one), which it beats.
	NetWakeOthers float64
	// FanOut is how many times dearer the net bytes of a step that sends
	// transfers of FanOutMin bytes or more to several peers at once
	// (mesh, one-shot) are when ranks outnumber cores: over loopback TCP
	// on shared cores such a step costs the senders' kernels more than
	// its bytes, and priced so only the steps that fan out are kept off
	// those sizes (docs/selector.md#tcp-on-shared-cores).
	FanOut    float64
	FanOutMin int64
	// Head is the time per byte, in seconds, that the first frameHead
	// bytes of each round's transfer over shm cost beyond the link's
	// Beta when every rank has a core: the receiver waits for them,
	// copied in on one core and read on the other, at the pace of the
	// cores' round trips before streaming takes over. It is what makes
	// a round of 16 KiB cost as much as a one-shot of it at np 2, where
	// Beta alone priced a ring of two such rounds below the one-shot
	// (docs/selector.md#heads-of-shm-rounds).
	Head float64
	// NoShm prices every link as the net class (HCCL_SHM_DISABLE=1).
	NoShm bool

	// Byte work (transfers, reductions, copies) slows down as a
	// server's working set, its ranks times the call's bytes, outgrows
	// the caches: at CacheBytes and below it runs at the prices above,
	// at MemBytes and beyond MemSlowdown times slower, from memory, and
	// in between by the same factor per doubling. Every algorithm of a
	// call has the same working set, so this moves the predictions and
	// not the order of the byte-bound algorithms; what it changes is
	// where fewer, bigger messages stop paying (docs/selector.md#memory).
	CacheBytes, MemBytes int64
	MemSlowdown          float64
	// Posted says which collectives hand the shm transfers from the
	// caller's send buffer over in place (bit 1<<Coll; HCCL_SHM_DIRECT),
	// for transfers of PostMin bytes and more: the receiver copies them
	// out of the sender's memory, one copy where the ring makes two, so
	// they are priced at half the shm link's bytes. It is what sets mesh
	// AllGather apart, all of whose sends leave from the send buffer,
	// where ring, rhd and pat forward from the receive buffer after their
	// first step (docs/selector.md#posted-transfers).
	Posted  uint32
	PostMin int64

	// Scratch bounds an algorithm's scratch per call, in bytes, as the
	// runtime bounds it by its buffer (plan.Request.ScratchLimit,
	// HCCL_BUFFSIZE); 0 means no bound. PAT cuts its blocks into pieces
	// to stay within it, at a step per piece, and cannot run below its
	// minimum (patCost).
	Scratch int64

	// MaxChannels bounds the channel count; each channel must get at least
	// MinChannelBytes of the call, so small calls get fewer, and no call
	// gets more than the Parallel of the link classes it uses
	// (Model.channelsFor).
	MaxChannels     int
	MinChannelBytes int64
	// MaxChannelCall is the largest call that gets more than one channel,
	// 0 for no bound: beyond it the channels measured slower
	// (docs/measurements.md#channels-where-they-win).
	MaxChannelCall int64
	// ChannelFloor and ChannelCeil are the job's own bounds of the count
	// (HCCL_MIN_NCHANNELS, HCCL_MAX_NCHANNELS), 0 where unset: the ceiling
	// lowers what the rule picks, the floor raises it, up to
	// MaxChannelCount.
	ChannelFloor, ChannelCeil int
	// MinSegment and MaxSegment bound the segment size in bytes.
	MinSegment, MaxSegment int64
}

// defaultTuning is DefaultModel's constants, one line of source each.
//
//go:embed default.tuning
var defaultTuning string

// DefaultPosted is the collectives whose large transfers from the send
// buffer go in place when HCCL_SHM_DIRECT is unset: those whose
// receivers only copy what they receive (runtime/env.go, directCopied).
const DefaultPosted uint32 = 1<<plan.AllGather | 1<<plan.AlltoAll | 1<<plan.AlltoAllV | 1<<plan.Broadcast

// defaultModel parses default.tuning once. Its segment bounds start open,
// so that the file may set them in either order.
var defaultModel = sync.OnceValue(func() Model {
	m, err := ParseTuning(strings.NewReader(defaultTuning), Model{MinSegment: 1, MaxSegment: math.MaxInt64})
	if err != nil {
		panic("selector: default.tuning: " + err.Error())
	}
	m.Posted = DefaultPosted
	return m
})

// DefaultModel returns the constants of default.tuning, for a server of
// this process's CPUs (a job replaces them with its server's: a rank bound
// to one CPU sees 1) and the collectives posted by default; its scratch
// is unbounded (Settings.Model bounds it by HCCL_BUFFSIZE). Their values
// and sources are in docs/selector.md#the-constants; a tuning file
// overrides any of them (ParseTuning).
func DefaultModel() Model {
	m := defaultModel()
	m.Cores = goruntime.NumCPU()
	return m
}

// PostedBit is collective c's bit in Model.Posted.
func PostedBit(c plan.Coll) uint32 { return 1 << c }

// Topo is the shape of the job the model prices: Ranks ranks on Servers
// servers (0 means one). Servers hold Ranks/Servers ranks each, as equal as
// possible, unless Largest says otherwise; a server's ranks are contiguous
// unless Scattered.
type Topo struct {
	Ranks, Servers int
	// Largest is the number of ranks on the largest server when servers
	// differ in size by more than the rounding of Ranks/Servers (3+2+1
	// ranks: 3), 0 otherwise. An uneven layout is the leaders' design of
	// the hierarchical algorithms, and the largest server the one whose
	// cores are shared most.
	Largest int
	// Scattered says that some server's ranks are not contiguous: pairs
	// of nearby ranks (rhd's first rounds) then cross servers.
	Scattered bool
}

// TopoOf is the Topo of n ranks laid out as l says (nil: one server).
func TopoOf(n int, l *plan.Layout) Topo {
	t := Topo{Ranks: n, Servers: l.Servers(), Scattered: !l.Contiguous()}
	if l == nil {
		return t
	}
	if l.Largest() != (n+t.Servers-1)/t.Servers {
		t.Largest = l.Largest()
	}
	return t
}

func (t Topo) servers() int { return max(t.Servers, 1) }

// perServer is the largest number of ranks on one server.
func (t Topo) perServer() int {
	if t.Largest > 0 {
		return t.Largest
	}
	s := t.servers()
	return (t.Ranks + s - 1) / s
}

// even tells whether every server holds the same number of ranks.
func (t Topo) even() bool {
	return t.Ranks%t.servers() == 0 && t.perServer()*t.servers() == t.Ranks
}

// String says how many ranks are on how many servers, and how large the
// largest is when they differ: "3 ranks, 2 servers, up to 2 on one".
func (t Topo) String() string {
	s := plural(t.Ranks, "rank") + ", " + plural(t.servers(), "server")
	if !t.even() {
		s += fmt.Sprintf(", up to %d on one", t.perServer())
	}
	if t.Scattered {
		s += ", not contiguous"
	}
	return s
}

func (t Topo) check() error {
	if t.Ranks < 1 {
		return fmt.Errorf("selector: %d ranks", t.Ranks)
	}
	if t.Servers < 0 || t.Servers > t.Ranks {
		return fmt.Errorf("selector: %d servers for %d ranks", t.Servers, t.Ranks)
	}
	if t.Largest < 0 || t.Largest > t.Ranks || t.Largest > 0 && t.Largest*t.servers() < t.Ranks {
		return fmt.Errorf("selector: %d ranks on %d servers, the largest of %d", t.Ranks, t.Servers, t.Largest)
	}
	return nil
}

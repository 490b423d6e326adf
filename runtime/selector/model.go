package selector

import (
	"fmt"
	goruntime "runtime"
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
// DefaultModel and override what a tuning file says.
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
	// to workers.
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
	// (ranks at work over cores). Wake and Handoff were fitted on hosts of
	// up to CrowdFrom ranks per core and cover those; this is the rest,
	// which makes an algorithm of many messages (mesh, one-shot) or many
	// rounds (ring) lose to one of few (dissemination, rhd) at 64 ranks
	// on 2 cores. A job that measured its host's hand-off prices with
	// that (WithHandoff).
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
	// wake-up waits for a core. Loopback TCP on 2 cores measured 22-43
	// us per received message at np 4 and 18-36 at np 3, whatever the
	// algorithm (cal15, np 4, 2 KiB: ring, 6 messages, 257 us; mesh, 6,
	// 223; rhd, 4, 169; one-shot, 3, 117).
	NetWake time.Duration
	// NetWakeOthers is the share of a NetWake that each receive of a
	// step beyond its first pays (the receives counted as hand-offs)
	// over TCP alone: the rank parks on the first, and by the time it
	// holds a core again the others have mostly arrived. Counted whole,
	// mesh (two rounds of two receives at np 3) was priced as ring (four
	// rounds of one) and measured 0.54-0.85 of it from 8 B to 128 KiB at
	// np 3 and 4, 0.97 once (cal35, cal36: np 3 8 B 77-86 us against
	// 107-108; 32 KiB 101-111 against 171-189; np 4 8 B 86-108 against
	// 118-133; np 4 128 KiB 291 against 299 in cal35).
	NetWakeOthers float64
	// FanOut is how many times dearer the net bytes of a step that sends
	// transfers of FanOutMin bytes or more to several peers at once
	// (mesh, one-shot) are when ranks outnumber cores. Over loopback TCP
	// at np 3 on 2 cores every algorithm's time jumps where its largest
	// transfer reaches 128 KiB (two loopback segments of 64 KiB), by
	// 50-70%: one-shot AllReduce 134-138 us at 112 KiB against 225-228
	// at 128 KiB; ring 346 us at 336 KiB against 525 at 384 KiB; mesh 333
	// against 553. Priced for the steps that send several such transfers
	// at once, it keeps one-shot and mesh off sizes where one peer at a
	// time wins; priced for every algorithm it cost one or two points of
	// cal36 and put ring or rhd in one-shot's place at np 3 128 KiB.
	// Larger socket buffers, reno or bbr, autocorking off and frames of
	// 64 or 128 KiB did not move the step; a profile puts the senders'
	// kernel time in tcp_write_xmit and softirqs (docs/selector.md).
	FanOut    float64
	FanOutMin int64
	// Head is the time per byte, in seconds, that the first frameHead
	// bytes of each round's transfer over shm cost beyond the link's
	// Beta when every rank has a core: the receiver waits for them,
	// copied in on one core and read on the other, at the pace of the
	// cores' round trips before streaming takes over. It is what makes
	// a round of 16 KiB cost as much as a one-shot of 16 KiB at np 2
	// (3.5 us), and a ring AllReduce of 32 KiB (two such rounds) 40%
	// more than the one-shot of all of it, where Beta alone priced the
	// ring cheaper.
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
	// where fewer, bigger messages stop paying. Measured on the KVM
	// machine (docs/selector.md, cal18 and cal19): one shm transfer at
	// np 2 moves 27 GB/s at 128 KiB, 20 at 1 MiB and 8.8-10.4 from 4 MiB on.
	CacheBytes, MemBytes int64
	MemSlowdown          float64
	// Posted says which collectives hand the shm transfers from the
	// caller's send buffer over in place (bit 1<<Coll; HCCL_SHM_DIRECT),
	// for transfers of PostMin bytes and more: the receiver copies them
	// out of the sender's memory, one copy where the ring makes two, so
	// they are priced at half the shm link's bytes. It is what sets mesh
	// AllGather apart, all of whose sends leave from the send buffer,
	// where ring, rhd and pat forward from the receive buffer after their
	// first step (at np 4 on 2 cores, 4 MiB: mesh 291 us, ring 483).
	Posted  uint32
	PostMin int64

	// MaxChannels bounds the channel count; each channel must get at least
	// MinChannelBytes of the call, so small calls get fewer.
	MaxChannels     int
	MinChannelBytes int64
	// MinSegment and MaxSegment bound the segment size in bytes.
	MinSegment, MaxSegment int64
}

// DefaultModel returns constants for the development machine (2 cores,
// AMD EPYC under KVM, Linux 6.18, Go 1.26), as of 2026-12-03 afternoon;
// docs/selector.md has how each was measured and the tables. Step,
// PollMax and the byte costs' ratios go back to the fit of 2026-12-02
// (cal11). On 2026-12-03 the byte costs were doubled and the memory
// slowdown added (neither changes the order of byte-bound algorithms,
// whose calls have one working set), the shm alpha doubled (which keeps
// one-shot's lead at np 2 up to 8 KiB), the net alpha set to what a round
// of loopback TCP costs at np 2 (10-11 us where 3.5 was priced), and wake
// and handoff to 2.5 times what they were: against the four calibrations
// since the algorithms were compared within each job (cal16-cal19), the
// choice is within 10% of the fastest at 175, 62, 182 and 179 points
// where the constants before scored 173, 62, 181 and 178, and the
// predictions went from 2.5x below the measured times at the median
// (within a factor of 2 at 295 of cal19's 717 cells) to 0.99 (613).
// Cores is this process's CPUs, which a job replaces with its server's
// (a rank bound to one CPU sees 1: runtime/select.go); a tuning file
// overrides any of them (ParseTuning).
func DefaultModel() Model {
	return Model{
		Links: [numClasses]LinkCost{
			Shm: {Alpha: 600 * time.Nanosecond, Beta: 1 / 2.75e10, Parallel: 2},
			// The net bandwidth as fitted on the Intel host of
			// 2026-12-04 once the TCP links used raw system calls and
			// cubic (cal32 7.97e9, cal33 8.33e9; it was 5.5e9 with
			// bbr): it changes no choice on either, and brings the
			// measured/predicted median from 0.77 to 0.80.
			Net: {Alpha: 10 * time.Microsecond, Beta: 1 / 8.2e9, Parallel: 2},
		},
		Gamma: 1 / 1.85e10,
		// The heads' price, chosen on the calibrations of the Intel
		// host (cal29-cal33: one point more within 10% on each, the
		// AllReduce of 32 KiB at np 2) and checked on the AMD host's
		// (cal27, unchanged): 6e9 to 16e9 choose alike. The least
		// squares fit says 2.5e10, which keeps ring at that point.
		Head:    1 / 12e9,
		Copy:    1 / 2.55e10,
		Step:    60 * time.Nanosecond,
		Handoff: 10 * time.Microsecond,
		// Below the poll's bound in the code (a receive of one frame):
		// with more ranks than cores a polled receive of tens of KiB
		// still waits for its peer's turn on a core. Chosen on the
		// calibration of 2026-12-03 07:30 (cal14 in docs/selector.md,
		// 8 to 32 KiB choose alike, 128 KiB 7 points worse, minima
		// over sweeps) and checked on the next one (cal15: 159 of 189
		// within 10% against 151 with 128 KiB), both on the KVM
		// machine; the mesh AllReduce of 128-256 KiB at np 3 and 4,
		// 15-52% slower than ring or rhd, is what it stops choosing.
		// 128 KiB was fitted on the PVM machine (cal7).
		PollMax: 16 << 10,
		Cores:   goruntime.NumCPU(),
		Wake:    5 * time.Microsecond,
		// The AMD host under PVM measured a hand-off of 2.0-3.0 us
		// (shm.MeasureHandoff; 1.9-2.7 us from C, on either vCPU), its
		// slow prices chosen on cal40 and checked on cal41 and cal42
		// (docs/selector.md). The KVM hosts' hand-off was not measured
		// (the code came after them); a context switch under KVM needs
		// no exit to the hypervisor, so it should read well below the
		// bound. If one reads above it, that host gets the slow prices,
		// which on cal36 chose 1.34x and 1.11x the fastest at two points.
		Slow: SlowHost{Handoff: 1500 * time.Nanosecond, Wake: 7 * time.Microsecond, PollMax: 32 << 10, NetAlpha: 13 * time.Microsecond},
		// In place of a Wake more per exchange round, which priced rhd
		// at np 3 and 4 above ring from 128 to 256 KiB, where it
		// measured 10-25% faster: without it rhd is priced below ring
		// from 1 MiB on too, where it measured slower, and the premium
		// on the bytes keeps it above there. Chosen on two calibrations
		// a day apart on two hosts (docs/selector.md, cal27 and cal29;
		// 1.05 to 1.2 choose alike) and checked on two more: 216 and
		// 220 of 228 points within 10% of the fastest (cal30, cal31),
		// against 210 and 219.
		Exchange:  1.1,
		Crowd:     1500 * time.Nanosecond,
		CrowdFrom: 2,
		NetWake:   15 * time.Microsecond,
		// Chosen together on cal36 (np 3 AllReduce over TCP at 128
		// KiB: mesh, where one-shot measured 1.8 times it in cal32 to
		// cal36; 220 -> 221 of 228 within 10%) and checked on cal35's
		// table and on cal37, run with them (74 -> 75 of 78; the job's
		// own choice there measured 197 us, one-shot 309): 1.5 to 3 and
		// 0.5 to 0.75 choose alike; either alone moves the miss
		// elsewhere (docs/selector.md).
		NetWakeOthers: 0.5,
		FanOut:        2,
		FanOutMin:     128 << 10,
		// One shm transfer at np 2 moved 27 GB/s at 128 KiB, 20 at
		// 1 MiB, 8.8-10.4 from 4 MiB on (cal19). Chosen among a few
		// settings scored against cal16-cal19 (choices, and how far
		// the predictions fall from the measured times).
		CacheBytes:  512 << 10,
		MemBytes:    32 << 20,
		MemSlowdown: 3,
		// The executor runs one channel and cuts transfers into
		// HCCL_BUFFSIZE/4 (256 KiB) segments whatever the selector says;
		// one channel keeps the prices those of what runs.
		MaxChannels:     1,
		MinChannelBytes: 256 << 10,
		MinSegment:      8 << 10,
		MaxSegment:      512 << 10,
		// The runtime's default (runtime/env.go) and bound (shmlink's
		// DirectMin; the runtime may settle a class of calls on the rings
		// instead, runtime/posttune.go).
		Posted:  PostedBit(plan.AllGather) | PostedBit(plan.AlltoAll) | PostedBit(plan.AlltoAllV) | PostedBit(plan.Broadcast),
		PostMin: 256 << 10,
	}
}

// PostedBit is collective c's bit in Model.Posted.
func PostedBit(c plan.Coll) uint32 { return 1 << c }

// Topo is the shape of the job the model prices: Ranks ranks on Servers
// servers, contiguous and as equal as possible (0 servers means one).
type Topo struct {
	Ranks, Servers int
}

func (t Topo) servers() int { return max(t.Servers, 1) }

// perServer is the largest number of ranks on one server.
func (t Topo) perServer() int {
	s := t.servers()
	return (t.Ranks + s - 1) / s
}

func (t Topo) check() error {
	if t.Ranks < 1 {
		return fmt.Errorf("selector: %d ranks", t.Ranks)
	}
	if t.Servers < 0 || t.Servers > t.Ranks {
		return fmt.Errorf("selector: %d servers for %d ranks", t.Servers, t.Ranks)
	}
	return nil
}

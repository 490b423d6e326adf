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
	// by ranks/Cores and a dependent round over shm costs Wake instead of
	// the shm alpha: waiting ranks sleep in a futex instead of spinning.
	// An exchange round (rhd: both ways with one partner at once) costs
	// one Wake more, the partner's and then its own.
	Cores int
	Wake  time.Duration
	// NoShm prices every link as the net class (HCCL_SHM_DISABLE=1).
	NoShm bool
	// Posted says which collectives hand the shm transfers from the
	// caller's send buffer over in place (bit 1<<Coll; HCCL_SHM_DIRECT),
	// for transfers of PostMin to PostMax bytes: the receiver copies them
	// out of the sender's memory, one copy where the ring makes two, so
	// they are priced at half the shm link's bytes. It is what sets mesh
	// AllGather apart, all of whose sends leave from the send buffer,
	// where ring, rhd and pat forward from the receive buffer after their
	// first step (at np 4 on 2 cores, 4 MiB: mesh 291 us, ring 483).
	Posted           uint32
	PostMin, PostMax int64

	// MaxChannels bounds the channel count; each channel must get at least
	// MinChannelBytes of the call, so small calls get fewer.
	MaxChannels     int
	MinChannelBytes int64
	// MinSegment and MaxSegment bound the segment size in bytes.
	MinSegment, MaxSegment int64
}

// DefaultModel returns constants fitted on the development machine (2
// cores, AMD EPYC under PVM, Linux 6.18, Go 1.26) by bench/calibrate on
// 2026-12-02 at 02:17 UTC (after shared memory learned to read large
// payloads in place and oversubscribed ranks to yield, which made a wake-up
// 6.5 us instead of 22 and a hand-off 12.6 instead of 53; load 2.1-2.4):
// every algorithm forced at np 2, 3 and 4, 8 B to 64 MiB, AllReduce,
// AllGather, ReduceScatter and Broadcast over shm and AllReduce over TCP,
// two sweeps, medians; then Fit (least squares on the relative error),
// rounded to two digits. The first calibration (load 5-22) had a shm alpha
// of 10 us and a step of 500 ns because its fit wanted them negative; on
// the quiet machine they came out at 1.3 us and 75 ns. docs/selector.md
// has the tables and what the model still gets wrong. The network class
// assumes the loopback TCP stack between servers. Cores is this machine's;
// a tuning file overrides any of them (ParseTuning).
func DefaultModel() Model {
	return Model{
		Links: [numClasses]LinkCost{
			Shm: {Alpha: 920 * time.Nanosecond, Beta: 1 / 1.4e10, Parallel: 2},
			Net: {Alpha: 58 * time.Microsecond, Beta: 1 / 2.2e9, Parallel: 2},
		},
		Gamma:   1 / 9.0e9,
		Copy:    1 / 2.1e10,
		Step:    175 * time.Nanosecond,
		Handoff: 12600 * time.Nanosecond,
		// Fitted on the calibration after the executor's poll (cal7 in
		// docs/selector.md): 32 to 128 KiB choose alike, 256 KiB (the
		// executor's default segment, the poll's bound in the code) one
		// point worse, no bound (the model before the poll) 24 clear
		// misses instead of 12.
		PollMax: 128 << 10,
		Cores:   goruntime.NumCPU(),
		Wake:    6500 * time.Nanosecond,
		// The executor runs one channel and cuts transfers into
		// HCCL_BUFFSIZE/4 (256 KiB) segments whatever the selector says;
		// one channel keeps the prices those of what runs.
		MaxChannels:     1,
		MinChannelBytes: 256 << 10,
		MinSegment:      8 << 10,
		MaxSegment:      512 << 10,
		// The runtime's default (runtime/env.go) and bounds
		// (shmlink's directMin, the executor's postMax).
		Posted:  PostedBit(plan.AllGather) | PostedBit(plan.AlltoAll) | PostedBit(plan.AlltoAllV),
		PostMin: 256 << 10,
		PostMax: 4 << 20,
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

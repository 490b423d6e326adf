package selector

import (
	"fmt"
	"time"
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
	// Step is the fixed cost of a step that only does local work.
	Step time.Duration

	// MaxChannels bounds the channel count; each channel must get at least
	// MinChannelBytes of the call, so small calls get fewer.
	MaxChannels     int
	MinChannelBytes int64
	// MinSegment and MaxSegment bound the segment size in bytes.
	MinSegment, MaxSegment int64
}

// DefaultModel returns constants measured on the development machines (2
// shared cores, AMD EPYC, load average about 12 from other jobs): memcpy
// 2.5 GB/s, a pure-Go float32 sum 1 GB/s per input, TCP over loopback 47 us
// one way and 0.25-1 GB/s; through the runtime at np=2, a 4-byte ring
// AllReduce (two dependent steps) takes 19 us at best and 50 us typically,
// a 16 MiB one 6 ms at best and 10-15 ms typically. The network class
// assumes the same TCP stack between servers. A tuning file overrides any
// of them (ParseTuning).
func DefaultModel() Model {
	return Model{
		Links: [numClasses]LinkCost{
			Shm: {Alpha: 10 * time.Microsecond, Beta: 1 / 1.25e9, Parallel: 2},
			Net: {Alpha: 50 * time.Microsecond, Beta: 1 / 0.8e9, Parallel: 2},
		},
		Gamma:           1 / 1e9,
		Copy:            1 / 2.5e9,
		Step:            500 * time.Nanosecond,
		MaxChannels:     2,
		MinChannelBytes: 256 << 10,
		MinSegment:      8 << 10,
		MaxSegment:      512 << 10,
	}
}

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

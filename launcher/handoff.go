package launcher

import (
	"time"

	"github.com/hcclrun/hcclrun/internal/handoff"
)

// A job whose ranks outnumber a host's CPUs waits, on every dependent
// round over shared memory, for a core to change hands. What that costs
// differs from host to host (docs/measurements.md#hand-off), and it moves
// the algorithm choices of such jobs (runtime/selector, SlowHost). So the
// launcher times it (internal/handoff) on its own host before the first
// rank starts, and writes it into the rank table (handoff_ns), where every
// rank reads the same figure and their cost models agree. Remote hosts are
// taken to be of the launcher's kind.
//
// Jobs with a core per rank never pay it, but their messages over TCP pay
// the same trip through the hypervisor when they wake a parked receiver,
// which the selector prices from the same figure (SlowHost.NetAlpha): so
// every job of two ranks or more measures it, about a millisecond at
// start; a job of one rank talks to nobody and skips it.
const (
	handoffBatches = 7
	handoffRounds  = 40
)

// measureHandoff returns the hand-off measured on the launcher's first
// CPU when the job has two ranks or more, and 0 when it has one or the
// measurement failed (the selector then prices as for a fast host; the
// failure is logged).
func (r *resolved) measureHandoff() time.Duration {
	ranks := 0
	for i := range r.hosts {
		ranks += r.hosts[i].Ranks
	}
	if ranks < 2 {
		return 0
	}
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) == 0 {
		r.log.Debug("hand-off not measured", "err", err)
		return 0
	}
	h, err := handoff.Measure(cpus[0], handoffBatches, handoffRounds)
	if err != nil {
		r.log.Debug("hand-off not measured", "err", err)
		return 0
	}
	r.log.Debug("hand-off measured", "cpu", cpus[0], "handoff", h)
	return h
}

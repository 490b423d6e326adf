package handoff

import (
	"cmp"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Measure times how long a waiter of an oversubscribed host takes to hand
// its core to the process it waits for: two threads bound to cpu pass a
// turn back and forth, each polling for it with a yield between looks, as
// the waiters of a host with more ranks than cores do. One pass is a
// context switch plus the two threads' looks and system calls, which a
// hypervisor may make dear (docs/measurements.md#hand-off).
//
// It makes batches of rounds passes and returns the median batch's mean,
// so that a batch interrupted by another process does not count. It
// fails if cpu cannot be bound (not in this process's affinity) or if the
// measurement takes longer than a second, which only a CPU busy with
// other work makes it do. It needs two of the Go scheduler's processors
// (GOMAXPROCS), one per thread: a thread that yields the CPU keeps its
// processor.
func Measure(cpu, batches, rounds int) (time.Duration, error) {
	if batches < 1 || rounds < 1 {
		return 0, fmt.Errorf("handoff: %d batches of %d rounds", batches, rounds)
	}
	if goruntime.GOMAXPROCS(0) < 2 {
		return 0, errors.New("handoff: needs GOMAXPROCS of 2 or more")
	}
	var turn atomic.Int64 // even: the measuring side's; odd: the other's
	var stop atomic.Bool
	ready := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		err := onCPU(cpu, func() {
			ready <- nil
			for want := int64(1); !stop.Load(); {
				if turn.Load() == want {
					turn.Store(want + 1)
					want += 2
					continue
				}
				yield()
			}
		})
		if err != nil {
			ready <- err
		}
	}()
	// On every return, the early ones included: the other thread polls
	// until stopped, and is given back with its binding before this
	// returns.
	defer func() {
		stop.Store(true)
		<-finished
	}()
	var h time.Duration
	var measured error
	err := onCPU(cpu, func() {
		if measured = <-ready; measured == nil {
			h, measured = passTurns(&turn, batches, rounds)
		}
	})
	return h, cmp.Or(err, measured)
}

// passTurns is the measuring side of Measure: it hands the turn
// over and waits for it back, rounds times per batch.
func passTurns(turn *atomic.Int64, batches, rounds int) (time.Duration, error) {
	deadline := time.Now().Add(time.Second)
	means := make([]time.Duration, batches)
	next := int64(0)
	for b := range means {
		start := time.Now()
		for range rounds {
			turn.Store(next + 1)
			for turn.Load() != next+2 {
				yield()
			}
			next += 2
		}
		means[b] = time.Since(start) / time.Duration(2*rounds)
		if time.Now().After(deadline) {
			return 0, errors.New("handoff: over a second: the CPU is busy")
		}
	}
	slices.Sort(means)
	return means[batches/2], nil
}

// onCPU runs f on a thread of its own bound to cpu, and gives the thread
// back to the Go scheduler with its binding as it was (a thread locked
// until its goroutine ends would be ended with it, but the process's main
// thread cannot end and would keep the binding).
func onCPU(cpu int, f func()) error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("handoff: read a thread's CPU affinity: %w", err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("handoff: bind a thread to CPU %d: %w", cpu, err)
	}
	defer unix.SchedSetaffinity(0, &old)
	f()
	return nil
}

// yield gives the processor to another runnable thread, if any
// (sched_yield), without the Go scheduler's system-call bookkeeping: what
// shm.Yield does between a waiter's looks.
func yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

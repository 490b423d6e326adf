package shm

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// MeasureHandoff times how long a waiter of an oversubscribed host takes
// to hand its core to the process it waits for: two threads bound to cpu
// pass a turn back and forth, each polling for it with Yield between
// looks, as the waiters of a host with more ranks than cores do
// (SetYield). One pass is a context switch plus the two threads' looks
// and system calls, which a hypervisor may make dear: 2.0-3.0 us on the
// PVM guest of 2026-12-06 (seven jobs' launchers), where a cache line
// crosses between the two vCPUs in 0.6-0.7 us.
//
// It makes batches of rounds passes and returns the median batch's mean,
// so that a batch interrupted by another process does not count. It
// fails if cpu cannot be bound (not in this process's affinity) or if the
// measurement takes longer than a second, which only a CPU busy with
// other work makes it do. It needs two of the Go scheduler's processors
// (GOMAXPROCS), one per thread: a thread that yields the CPU keeps its
// processor.
func MeasureHandoff(cpu, batches, rounds int) (time.Duration, error) {
	if batches < 1 || rounds < 1 {
		return 0, fmt.Errorf("shm: measure hand-off: %d batches of %d rounds", batches, rounds)
	}
	if goruntime.GOMAXPROCS(0) < 2 {
		return 0, errors.New("shm: measure hand-off: needs GOMAXPROCS of 2 or more")
	}
	var turn atomic.Int64 // even: the measuring side's; odd: the other's
	var stop atomic.Bool
	ready := make(chan error, 1)
	go func() {
		// The thread dies with the goroutine (locked, never unlocked), so
		// its binding does not leak into the Go scheduler's threads.
		goruntime.LockOSThread()
		if err := bindThreadTo(cpu); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for want := int64(1); !stop.Load(); {
			if turn.Load() == want {
				turn.Store(want + 1)
				want += 2
				continue
			}
			Yield()
		}
	}()
	// Set on every return, the early ones included: the other thread
	// polls until then.
	defer stop.Store(true)
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return 0, err
	}
	defer unix.SchedSetaffinity(0, &old)
	if err := bindThreadTo(cpu); err != nil {
		return 0, err
	}
	if err := <-ready; err != nil {
		return 0, err
	}

	deadline := time.Now().Add(time.Second)
	means := make([]time.Duration, batches)
	next := int64(0)
	for b := range means {
		start := time.Now()
		for range rounds {
			turn.Store(next + 1)
			for turn.Load() != next+2 {
				Yield()
			}
			next += 2
		}
		elapsed := time.Since(start)
		means[b] = elapsed / time.Duration(2*rounds)
		if time.Now().After(deadline) {
			return 0, errors.New("shm: measure hand-off: over a second: the CPU is busy")
		}
	}
	slices.Sort(means)
	return means[batches/2], nil
}

// bindThreadTo restricts the calling thread, locked to its goroutine, to
// cpu.
func bindThreadTo(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("shm: bind a thread to CPU %d: %w", cpu, err)
	}
	return nil
}

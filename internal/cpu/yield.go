package cpu

import (
	goruntime "runtime"
	"sync/atomic"
	"time"
)

// YieldGoroutine lets the process's other goroutines run on this thread's
// processor (runtime.Gosched). Waiters call it between looks, with how long
// they have waited, so that a goroutine of their own process they wait for
// (a worker moving the other half of a step) is not held up by their spin.
//
// A process whose collectives are called on goroutines locked to their
// threads says so (SetLockedCallers): cgo locks every call from a C thread
// into Go so, and there each Gosched hands the locked thread to the
// scheduler and back, two futex round trips. Such a process yields only
// once a wait has lasted LockedYieldAfter: a small call's short waits then
// pay no hand-over, a large call's long ones still let the workers run
// (docs/performance.md#the-c-interface has both sides measured).
func YieldGoroutine(waited time.Duration) {
	if !lockedCallers.Load() || waited >= LockedYieldAfter {
		goruntime.Gosched()
	}
}

// LockedYieldAfter is how long a wait of a locked caller spins before it
// yields to the scheduler: longer than a small call's whole exchange.
const LockedYieldAfter = 2 * time.Microsecond

// SetLockedCallers says whether the process's collectives run on goroutines
// locked to their threads (false, the default, for Go programs).
func SetLockedCallers(locked bool) { lockedCallers.Store(locked) }

var lockedCallers atomic.Bool

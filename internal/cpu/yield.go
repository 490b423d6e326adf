package cpu

import (
	goruntime "runtime"
	"sync/atomic"
)

// YieldGoroutine lets the process's other goroutines run on this thread's
// processor (runtime.Gosched). Waiters call it between looks, so that a
// goroutine of their own process they wait for is not held up by their
// spin.
//
// A process whose collectives are called on goroutines locked to their
// threads turns it off (SetGoroutineYield(false)): cgo locks every call
// from a C thread into Go so, and there each Gosched hands the locked
// thread to the scheduler and back, two futex round trips, which made an
// 8-byte AllReduce several times slower (docs/performance.md#the-c-interface).
func YieldGoroutine() {
	if !noGoroutineYield.Load() {
		goruntime.Gosched()
	}
}

// SetGoroutineYield turns YieldGoroutine on (the default) or off for the
// whole process.
func SetGoroutineYield(on bool) { noGoroutineYield.Store(!on) }

var noGoroutineYield atomic.Bool

// Package handoff times how long a waiter of an oversubscribed host takes
// to hand its core to the process it waits for (Measure). The launcher
// measures it once per job and writes it into the rank table, where every
// rank's cost model reads the same figure (runtime/selector, SlowHost).
//
// It is a leaf of its own rather than part of shm so that the launcher
// measures without linking the shared-memory transport: the figure is
// the scheduler's and the hypervisor's, not the rings'. Its two threads
// wait as shm's waiters do on such a host, with sched_yield between looks
// (shm.WaitPolicy.Yield).
package handoff

package launcher

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Ranks on this machine are bound to CPUs, as mpirun binds them: a rank
// that the scheduler may move, or put on the core of the rank it is
// talking to, waits for wake-ups and refills its caches; bound, a 1 MiB
// AllReduce over TCP ran about 15% faster
// (docs/measurements.md#ranks-bound-to-cpus).
//
// The policy (Job.Bind, hcclrun --bind-to):
//
//   - BindAuto, the default: when the host's ranks do not outnumber the
//     CPUs the launcher may use, each rank gets its block of them (the rank
//     table's cpu_list: with 8 CPUs and 2 ranks, 4 each, so that a rank's
//     own threads still have room); an oversubscribed host stays unbound,
//     as with mpirun, where the scheduler's balancing is all there is.
//   - BindCore: one CPU per rank (a hardware thread on an SMT machine);
//     more ranks than CPUs is an error.
//   - BindNone: no binding.
//
// Remote hosts are bound alike, from the CPUs their agent may use (it says
// so in its ready message); the agent's spawner binds the ranks.

// BindPolicy says how ranks are bound to CPUs.
type BindPolicy uint8

// The binding policies.
const (
	BindAuto BindPolicy = iota
	BindNone
	BindCore
)

// ParseBindPolicy parses a --bind-to value: auto, none, or core (hwthread
// is taken as core).
func ParseBindPolicy(s string) (BindPolicy, error) {
	switch s {
	case "", "auto":
		return BindAuto, nil
	case "none":
		return BindNone, nil
	case "core", "hwthread":
		return BindCore, nil
	}
	return 0, Usagef("--bind-to %q: want auto, none or core", s)
}

func (b BindPolicy) String() string {
	switch b {
	case BindNone:
		return "none"
	case BindCore:
		return "core"
	}
	return "auto"
}

// bindCPUs returns the CPUs that the ranks of a host, ranks of them, are
// dealt out from (Host.CPUs) under p, auto or core (none binds nothing and
// does not ask), or nil to leave them unbound. allowed are the host's CPUs
// (resolved.allowedOn); where names the host in errors.
func bindCPUs(p BindPolicy, ranks int, allowed []int, where string) ([]int, error) {
	if ranks > len(allowed) {
		if p == BindCore {
			return nil, Usagef("--bind-to core: %d ranks on %s, which has %d CPUs for them (use --bind-to none)", ranks, where, len(allowed))
		}
		return nil, nil
	}
	if p == BindCore {
		return allowed[:ranks], nil
	}
	return allowed, nil
}

// allowedCPUs returns the CPUs this process may run on, in order.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read the launcher's CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// bindThread restricts the calling thread, which must be locked to its
// goroutine, to cpus, so that a child it starts inherits the binding; the
// returned function restores the thread's own, and that of any thread
// the Go runtime started from this one meanwhile (a clone inherits the
// binding: CI saw a launcher thread left on one CPU). One thread is bound
// at a time (bindMu), which costs nothing: forks are serialised anyway
// (syscall.ForkLock). With no cpus it does nothing.
func bindThread(cpus []int) (restore func(), err error) {
	if len(cpus) == 0 {
		return func() {}, nil
	}
	bindMu.Lock()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		bindMu.Unlock()
		return nil, err
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		bindMu.Unlock()
		return nil, fmt.Errorf("bind to CPUs %v: %w", cpus, err)
	}
	return func() {
		defer bindMu.Unlock()
		_ = unix.SchedSetaffinity(0, &old)
		unbindStrays(&set, &old)
	}, nil
}

// bindMu is held while a thread of the launcher is bound (bindThread).
var bindMu sync.Mutex

// unbindStrays gives every thread of this process still bound to set the
// affinity old. Only threads started while a spawning thread was bound
// can be: no other thread binds itself meanwhile (bindMu).
func unbindStrays(set, old *unix.CPUSet) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		var cur unix.CPUSet
		if unix.SchedGetaffinity(tid, &cur) == nil && cur == *set && cur != *old {
			_ = unix.SchedSetaffinity(tid, old)
		}
	}
}

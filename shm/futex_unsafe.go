package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations without FUTEX_PRIVATE_FLAG: the word is in a MAP_SHARED
// mapping and the waker is another process, so the kernel must key the
// wait queue on the physical page, not on this process's address space.
const (
	futexWait = 0 // FUTEX_WAIT
	futexWake = 1 // FUTEX_WAKE
)

// futexSleep blocks while *w == val, for at most d. Spurious returns (EINTR,
// EAGAIN because the word already changed, the timeout) are not errors: the
// caller re-checks its condition in every case.
func futexSleep(w *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	// unix.Syscall6, not RawSyscall: the goroutine's thread blocks in the
	// kernel, and the Go scheduler must hand its P to other goroutines.
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWakeUp wakes up to n sleepers on w.
func futexWakeUp(w *atomic.Uint32, n int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(n), 0, 0, 0)
}

// Yield gives the processor to another runnable thread of the system, if
// any (sched_yield): what the waiters of an oversubscribed host do between
// looks (WaitPolicy.Yield), and what a caller polling several rings should do
// too. It does not block, so it bypasses the Go scheduler's system-call
// bookkeeping.
func Yield() { unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }

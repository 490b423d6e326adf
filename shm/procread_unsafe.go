package shm

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Addr returns the address of p's first byte in this process, for a peer
// that reads it with ReadProcess. p must not be empty, and must not live on
// a goroutine stack, which moves when it grows: a heap object or a mapping
// (a slice longer than the compiler's largest stack variable, 128 KiB,
// cannot be on a stack).
func Addr(p []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&p[0]))) }

// ReadProcess copies len(dst) bytes from address addr of process pid into
// dst (process_vm_readv), looping over partial reads. A process that no
// longer exists is reported as ErrPeerGone.
//
// The system call is raw: the Go runtime is not told that the thread is
// in the kernel, so the goroutine keeps its P. The call never waits, but
// copying a payload of hundreds of KiB takes longer than a tick of the
// runtime's monitor thread (sysmon, 20 us), which then takes the P away
// and hands it back when the call returns: two context switches on the
// rank's core per long read when the rank is bound to one CPU, and the
// other thread's work in the cache between them (the same as the TCP
// links' reads and writes, runtime/transport/tcplink/raw.go;
// docs/measurements.md#raw-system-calls).
func ReadProcess(pid int, dst []byte, addr uint64) error {
	return processVM(unix.SYS_PROCESS_VM_READV, "process_vm_readv", pid, dst, addr)
}

// WriteProcess copies src to address addr of process pid
// (process_vm_writev), as ReadProcess reads.
func WriteProcess(pid int, src []byte, addr uint64) error {
	return processVM(unix.SYS_PROCESS_VM_WRITEV, "process_vm_writev", pid, src, addr)
}

// processVM moves len(local) bytes between local and address addr of
// process pid with the system call nr (process_vm_readv or _writev, named
// name), looping over partial transfers.
func processVM(nr uintptr, name string, pid int, local []byte, addr uint64) error {
	for len(local) > 0 {
		iov := unix.Iovec{Base: &local[0]}
		iov.SetLen(len(local))
		remote := unix.RemoteIovec{Base: uintptr(addr), Len: len(local)}
		// The syscall directly, with the vectors on the stack: the
		// x/sys wrapper takes slices, which would escape. Raw: see
		// ReadProcess's doc.
		n, _, errno := unix.RawSyscall6(nr, uintptr(pid),
			uintptr(unsafe.Pointer(&iov)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.ESRCH:
			return fmt.Errorf("%w: process %d: %w", ErrPeerGone, pid, errno)
		case errno != 0:
			return fmt.Errorf("%s of %d bytes at %#x in process %d: %w", name, len(local), addr, pid, errno)
		case n == 0:
			return fmt.Errorf("%s of %d bytes at %#x in process %d: %w", name, len(local), addr, pid, errors.New("nothing moved"))
		}
		local = local[n:]
		addr += uint64(n)
	}
	return nil
}

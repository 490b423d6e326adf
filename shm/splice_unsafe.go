package shm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Splice hands as much of p to the pipe whose write end is fd as fits now
// (vmsplice(2) with SPLICE_F_NONBLOCK) and returns how many bytes that was;
// 0 when the pipe is full or the kernel refuses. The pipe then refers to
// p's pages, not to a copy: what the reader gets is what p holds when it
// reads, so p must stay as it is until the reader is done. p must not live
// on a goroutine stack (see Addr).
func Splice(fd int, p []byte) int {
	if fd < 0 || len(p) == 0 {
		return 0
	}
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	// The system call directly, with the vector on the stack (as
	// ReadProcess does): x/sys's wrapper takes a slice, which escapes.
	// Raw, as ReadProcess is: it pins up to a pipe's worth of pages.
	n, _, errno := unix.RawSyscall6(unix.SYS_VMSPLICE, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1, unix.SPLICE_F_NONBLOCK, 0, 0)
	if errno != 0 {
		return 0
	}
	return int(n)
}

// ReadSpliced reads from the read end fd of a pipe into p, read(2) as a
// raw system call (see ReadProcess): the pipes are non-blocking, and a
// read of a spliced head copies up to a pipe's worth of bytes.
func ReadSpliced(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

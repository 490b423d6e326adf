package tcplink

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The reads and writes of a pollConn are raw system calls: the Go
// runtime is not told that the thread enters the kernel, so it keeps the
// goroutine's P. The socket is non-blocking, so no call waits; but copying
// a frame of up to frameBytes in or out of the socket takes tens of
// microseconds, and once a call lasts longer than one tick of the
// runtime's monitor thread (sysmon, 20 us) that thread takes the P away
// from it and hands it back when the call returns: two context switches on
// the rank's core at every long read or write, when the rank is bound to
// one CPU (GOMAXPROCS 1). Raw calls remove nearly all of them and a
// quarter of a 1 MiB message's time (docs/measurements.md#raw-system-calls).

// rawRead is read(2) on fd without telling the runtime.
func rawRead(fd int, p []byte) (int, error) {
	var base unsafe.Pointer
	if len(p) > 0 {
		base = unsafe.Pointer(&p[0])
	}
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(base), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// maxIovecs bounds the buffers one rawWritev passes: a frame's header and
// payload, and what is left of them after a partial write.
const maxIovecs = 4

// rawWritev is writev(2) of the first maxIovecs of bufs on fd without
// telling the runtime; iov is the caller's scratch, so that a call
// allocates nothing. Like writev, it may write less than asked.
func rawWritev(fd int, bufs [][]byte, iov *[maxIovecs]unix.Iovec) (int, error) {
	n := min(len(bufs), maxIovecs)
	for i, b := range bufs[:n] {
		iov[i] = unix.Iovec{}
		if len(b) > 0 {
			iov[i].Base = &b[0]
			iov[i].SetLen(len(b))
		}
	}
	var base unsafe.Pointer
	if n > 0 {
		base = unsafe.Pointer(&iov[0])
	}
	written, _, errno := unix.RawSyscall(unix.SYS_WRITEV, uintptr(fd), uintptr(base), uintptr(n))
	clear(iov[:n]) // do not keep the caller's buffers alive
	if errno != 0 {
		return 0, errno
	}
	return int(written), nil
}

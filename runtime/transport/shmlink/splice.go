package shmlink

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/shm"
)

// Spliced payloads: the head of a direct payload through a pipe.
//
// process_vm_readv pins every page it reads from the consumer's side
// (pin_user_pages_remote walks the producer's page tables under its mmap
// lock, one page at a time), and on some hosts the pinning costs more
// than the copy. vmsplice(2) hands the same pages to a pipe from the
// producer's own side (get_user_pages_fast, without the lock) and the
// consumer's read(2) copies them out of the pipe: still one copy, and the
// pages are only referenced, not copied, by the splice. Where the kernel
// pins pages fast the pipes cost instead (docs/measurements.md#pipes):
// DialConfig.NoPipes leaves them out, as the runtime does where
// ProbePipes says they do not pay (pipeprobe.go; WithoutPipes).
//
// So each direction of a link that may hand payloads over in place also
// has a pipe, made by the dialer and passed with the segment, of up to
// spliceCapacity bytes (PipeBytes). TryPost splices (shm.Splice) as much
// of the payload as the pipe takes without waiting, before it writes the
// reference (the frame then says how many bytes went into the pipe); the
// consumer reads those bytes from the pipe and the rest, if any, with
// process_vm_readv. Frames are spliced and
// read in the same order, so the pipe holds the heads of the posted frames
// one after the other. Because the pipe only references the producer's
// pages, the producer still waits for the acknowledgement before its
// caller may touch the memory again, as for any direct payload.
//
// The pipes are non-blocking on both ends: a producer never waits for room
// (a full pipe splices nothing, and the payload is read in place as
// before), and a consumer that finds fewer bytes than the frame promised
// fails instead of hanging.

// spliceCapacity is the most asked of a pipe: Linux's default
// /proc/sys/fs/pipe-max-size, the most an unprivileged process may ask,
// and the 512 KiB blocks of a 1 MiB AllGather or AlltoAll at np 2 with room
// to spare. A refused size leaves the pipe at its default (64 KiB); that
// only makes the spliced heads shorter.
const spliceCapacity = 1 << 20

// pipeBudget bounds what the pipes of one job's ranks on a host ask for
// together. Linux counts pipe buffers per user (pipe-user-pages-soft, 64
// MiB by default); beyond that allowance every new pipe of the user, in
// any program, gets two pages. A quarter of it leaves the user's other
// pipes alone: at np 2 to 4 every pipe gets 1 MiB, at np 8 256 KiB.
const pipeBudget = 16 << 20

// PipeBytes returns the size Dial asks of each pipe of a link when
// localRanks ranks of the job share this host (DialConfig.PipeBytes):
// spliceCapacity, or less so that the host's n(n-1) pipes take at most
// pipeBudget, rounded down to a power of two; at least a page.
func PipeBytes(localRanks int) int {
	if localRanks < 2 {
		return spliceCapacity
	}
	share := pipeBudget / (localRanks * (localRanks - 1))
	b := spliceCapacity
	for b > 4096 && b > share {
		b /= 2
	}
	return b
}

// pipes are a link's ends of its two pipes: out, the write end of the pipe
// the peer reads, and in, the read end of the pipe the peer writes. -1
// where there is none.
type pipes struct{ in, out int }

var noPipes = pipes{in: -1, out: -1}

// newPipes makes the two pipes of a link, asking size bytes of each (0:
// spliceCapacity): mine are the dialer's ends, theirs go to the listener.
func newPipes(size int) (mine, theirs pipes, err error) {
	if size <= 0 {
		size = spliceCapacity
	}
	var a, b [2]int // a carries the dialer's payloads, b the listener's
	if err := unix.Pipe2(a[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return noPipes, noPipes, fmt.Errorf("pipe for spliced payloads: %w", err)
	}
	if err := unix.Pipe2(b[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		unix.Close(a[0])
		unix.Close(a[1])
		return noPipes, noPipes, fmt.Errorf("pipe for spliced payloads: %w", err)
	}
	for _, w := range []int{a[1], b[1]} {
		_, _ = unix.FcntlInt(uintptr(w), unix.F_SETPIPE_SZ, size)
	}
	return pipes{in: b[0], out: a[1]}, pipes{in: a[0], out: b[1]}, nil
}

// close closes the ends that are open.
func (p pipes) close() {
	for _, fd := range []int{p.in, p.out} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// errShortPipe says the pipe held fewer bytes than a frame said were
// spliced into it: the two sides are out of step.
var errShortPipe = errors.New("the pipe holds fewer bytes than the frame says were spliced")

// readPipe fills p from the pipe in, whose bytes must all be there.
func readPipe(in int, p []byte) error {
	for len(p) > 0 {
		n, err := shm.ReadSpliced(in, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || n == 0:
			return fmt.Errorf("%w (%d bytes missing)", errShortPipe, len(p))
		case err != nil:
			return fmt.Errorf("reading a spliced payload from its pipe: %w", err)
		}
		p = p[n:]
	}
	return nil
}

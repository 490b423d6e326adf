package shmlink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/internal/cpu"
	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/shm"
)

// Direct payloads: large payloads handed over in place.
//
// Through the ring a payload is copied twice, into the ring by the sender
// and out of it by the receiver. A payload of at least DirectMin bytes
// goes over in place instead, when the receiver has shown at set-up that
// it can read the sender's memory (shm.Ring.ProbeProducer): the sender
// writes the frame's header, marked flagDirect, and the payload's address
// in its own process; the receiver copies the payload from there with
// process_vm_readv straight into its destination (or, to reduce it, into a
// small scratch buffer piece by piece; the head of the payload that the
// sender could splice into the link's pipe comes from the pipe instead,
// splice.go), then acknowledges it
// (shm.Ring.Ack). Send returns after the acknowledgement; TryPost returns at
// once and WaitPosted waits for the acknowledgements, so that a rank posts
// its sends and goes on to its receives on one goroutine: on two cores,
// every extra goroutine that has to run is a hand-off between threads.
//
// This is what Open MPI's vader does for messages above 4 KiB (its
// "single copy mechanism", CMA). Below DirectMin the ring is faster: a
// system call and an acknowledgement cost more than the second copy.
//
// A payload that lies in one of the sender's shared regions (shm.Region,
// what runtime.MemAlloc hands out) is read without the kernel: the
// reference also names the region's file and the payload's offset in it,
// and the receiver copies the payload out of its own mapping of that file
// (shm.PeerRegions), several times as fast as process_vm_readv
// (docs/measurements.md#regions). Such a payload is never spliced into the
// pipe nor offered as a shared read: the receiver's plain copy beats both.

const (
	// flagDirect marks a frame whose payload stays in the sender's memory;
	// a directRefSize-byte reference follows the header in the ring: the
	// payload's address, how many of its first bytes were spliced into the
	// pipe (splice.go), and, for a payload in a shared region, the
	// region's inode, the payload's offset in it and the region's
	// descriptor number in the sender (inode 0: not in a region), each 8
	// bytes little-endian.
	flagDirect = 1
	// flagSenderWaits, with flagDirect, says that the sender only waits
	// for acknowledgements after this post (TryPost's thenWaits): the
	// receiver may offer it a share of the copy (share.go).
	flagSenderWaits = 2
	directRefSize   = 40

	// directPiece is how much VisitPayload reads at a time into its
	// scratch buffer: small enough to stay in the cache for the reduction
	// that follows, large enough that the system call is a few percent.
	directPiece = 128 << 10
)

// DirectMin is the smallest payload TryPost hands over in place. It must
// exceed the compiler's largest stack variable (128 KiB): a goroutine stack
// moves when it grows, and the receiver would read where the payload used
// to be; a longer slice is necessarily in the heap or in a mapping, which
// stay put.
const DirectMin = 256 << 10

// probePeer returns the peer's process id when this side can read the
// peer's memory, and marks rx so that the peer hands large payloads over in
// place; it returns 0 when it cannot (the payloads then go through the ring).
func probePeer(conn *net.UnixConn, rx *shm.Ring) int {
	pid, err := peerPID(conn)
	if err != nil || pid <= 0 {
		return 0 // a peer in another pid namespace shows as 0
	}
	if rx.ProbeProducer(pid) != nil {
		return 0
	}
	return pid
}

// peerPID returns the process id of the other end of conn, as the kernel
// recorded it when the connection was made (SO_PEERCRED), in this
// process's pid namespace.
func peerPID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return int(cred.Pid), nil
}

// ReadsDirect reports whether the peer hands this side large payloads in
// place (this side proved at set-up that it can read the peer's memory).
func (l *Link) ReadsDirect() bool { return l.rx.Direct() }

// post splices what it can of p into the pipe, then writes the header of
// the frame h, marked, and the reference to p. It waits only if the ring
// has no room for those few bytes.
func (l *Link) post(ctx context.Context, h *wire.Header, p []byte, thenWaits bool) error {
	region, inRegion := shm.FindRegion(p)
	spliced := 0
	if !inRegion {
		spliced = shm.Splice(l.pipes.out, p)
	}
	flags := uint8(flagDirect)
	if thenWaits {
		flags |= flagSenderWaits
	}
	h.EncodeFlagged(l.hdrOut[:wire.HeaderSize], flags)
	ref := l.hdrOut[wire.HeaderSize:]
	binary.LittleEndian.PutUint64(ref, shm.Addr(p))
	binary.LittleEndian.PutUint64(ref[8:], uint64(spliced))
	binary.LittleEndian.PutUint64(ref[16:], region.Inode)
	binary.LittleEndian.PutUint64(ref[24:], region.Offset)
	binary.LittleEndian.PutUint64(ref[32:], uint64(region.FD))
	if err := l.tx.Write(ctx, l.hdrOut[:]); err != nil {
		return err
	}
	l.posted++
	l.unacked = append(l.unacked, p)
	return nil
}

// TryPost hands the frame h, p over in place if p is large enough, the peer
// can read this process and the ring has room for the reference now (see
// transport.Poster).
func (l *Link) TryPost(ctx context.Context, h *wire.Header, p []byte, thenWaits bool) (bool, error) {
	if int(h.Len) != len(p) {
		return false, l.sendFail(fmt.Errorf("header says %d payload bytes, got %d", h.Len, len(p)))
	}
	if len(p) < DirectMin {
		return false, nil
	}
	// Ready first: after Close the ring's memory is gone.
	if err := l.sendReady(); err != nil {
		return false, err
	}
	if !l.tx.Direct() || !l.tx.HasRoom(len(l.hdrOut)) {
		return false, nil
	}
	return true, l.sent(l.post(ctx, h, p, thenWaits))
}

// WaitPosted waits until the peer has read every payload this side handed
// over in place.
func (l *Link) WaitPosted(ctx context.Context) error {
	if l.posted == 0 {
		return nil
	}
	if err := l.sendReady(); err != nil {
		return err
	}
	if err := l.tx.AwaitAcks(ctx, l.posted, l.writer); err != nil {
		return l.sent(err)
	}
	// The caller's buffers are its own again: no reference kept.
	clear(l.unacked)
	l.unacked = l.unacked[:0]
	return nil
}

// readRef reads the reference that follows a header marked flagDirect and
// sets the receiver's view of the payload: its address in the peer (0 for
// an unmarked header), how many of its first bytes are in the pipe, and
// its bytes in this side's mapping of the peer's region, if it lies in one.
func (l *Link) readRef(ctx context.Context, h *wire.Header, flags uint8) error {
	l.remote, l.spliced, l.mapped = 0, 0, nil
	switch {
	case flags == 0:
		return nil
	case flags&^flagSenderWaits != flagDirect:
		return fmt.Errorf("%w: unknown flags %#02x", wire.ErrBadFrame, flags)
	case l.pid == 0 || h.Len == 0:
		// The peer was never told that this side reads in place.
		return fmt.Errorf("%w: a direct payload of %d bytes that this side did not agree to", wire.ErrBadFrame, h.Len)
	}
	ref := l.hdrIn[wire.HeaderSize:]
	if err := l.rx.Read(ctx, ref); err != nil {
		return err
	}
	addr := binary.LittleEndian.Uint64(ref)
	n := binary.LittleEndian.Uint64(ref[8:])
	region := shm.RegionRef{
		Inode:  binary.LittleEndian.Uint64(ref[16:]),
		Offset: binary.LittleEndian.Uint64(ref[24:]),
		FD:     int(binary.LittleEndian.Uint64(ref[32:])),
	}
	switch {
	case addr == 0:
		return fmt.Errorf("%w: a direct payload at address 0", wire.ErrBadFrame)
	case n > uint64(h.Len):
		return fmt.Errorf("%w: %d bytes of a %d-byte direct payload spliced", wire.ErrBadFrame, n, h.Len)
	case n > 0 && l.pipes.in < 0:
		return fmt.Errorf("%w: %d bytes spliced into a pipe this link does not have", wire.ErrBadFrame, n)
	case n > 0 && region.Inode != 0:
		return fmt.Errorf("%w: a payload in a shared region, %d bytes of it spliced", wire.ErrBadFrame, n)
	}
	l.remote, l.spliced = addr, int(n)
	if region.Inode != 0 {
		// A region this side cannot map (a peer in another mount
		// namespace, say) is still readable with process_vm_readv.
		l.mapped, _ = l.regions.Payload(region, int(h.Len))
	}
	return nil
}

// readDirect copies len(p) bytes of the current direct payload, from off
// on, into p: what of them was spliced from the pipe, the rest out of the
// peer's memory. Calls must go through the payload in order.
func (l *Link) readDirect(p []byte, off int) error {
	if off < l.spliced {
		k := min(len(p), l.spliced-off)
		if err := readPipe(l.pipes.in, p[:k]); err != nil {
			return fmt.Errorf("reading %d bytes of rank %d's payload from the pipe: %w", k, l.peer, err)
		}
		p, off = p[k:], off+k
	}
	if len(p) == 0 {
		return nil
	}
	if l.mapped != nil {
		cpu.Copy(p, l.mapped[off:])
		return nil
	}
	if err := shm.ReadProcess(l.pid, p, l.remote+uint64(off)); err != nil {
		return fmt.Errorf("reading %d bytes of rank %d's payload in place: %w", len(p), l.peer, err)
	}
	return nil
}

// visitDirect is VisitPayload for a direct payload: it reads the payload
// into the scratch buffer a piece at a time and shows each piece.
func (l *Link) visitDirect(n int, fn func(off int, b []byte)) error {
	if l.mapped != nil {
		// Shown straight from the mapping, in pieces as from the
		// scratch buffer: the reduction of one stays in the cache.
		for off := 0; off < n; off += directPiece {
			fn(off, l.mapped[off:min(n, off+directPiece)])
		}
		return l.consumedDirect()
	}
	if l.scratch == nil {
		l.scratch = make([]byte, directPiece)
	}
	for off := 0; off < n; {
		b := l.scratch[:min(n-off, len(l.scratch))]
		if err := l.readDirect(b, off); err != nil {
			return l.recvBroken(err)
		}
		fn(off, b)
		off += len(b)
	}
	return l.consumedDirect()
}

// consumedDirect ends a direct payload that was read: it acknowledges it so
// that the sender may reuse the memory. A sender whose call failed closes
// its rings before its caller can touch the memory again; a ring closed by
// now means that the bytes read may not be the payload.
func (l *Link) consumedDirect() error {
	if l.rx.Closed() {
		return l.recvBroken(errors.New("the ring closed while its payload was read in place"))
	}
	l.rx.Ack()
	l.pending, l.inFrame, l.remote, l.spliced, l.mapped = 0, false, 0, 0, nil
	return nil
}

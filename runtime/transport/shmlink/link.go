package shmlink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/hcclrun/hcclrun/internal/cpu"
	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/shm"
)

// ErrClosed is returned by calls on a Link after Close.
var ErrClosed = errors.New("shmlink: link closed")

// smallFrame is the largest frame Send writes with one commit (header and
// payload together), so that a small message wakes the receiver once and
// it finds the whole frame. Larger payloads are written in pieces so that
// the receiver can start on the first piece while the next is copied.
const smallFrame = 64 << 10

// maxPiece bounds the pieces VisitPayload shows, so that the ring space of
// a piece returns to the sender while the next piece is being reduced.
const maxPiece = 128 << 10

// Link is a transport.Link over shared memory to one peer on this host.
// One goroutine may send while another receives; Shut may be called
// concurrently with both, Close only once neither is in a call (it unmaps
// the memory they use).
type Link struct {
	self, peer int
	tag        uint32

	seg    *shm.Segment
	tx, rx *shm.Ring
	conn   *net.UnixConn // liveness channel, see shm.Watch
	word   [8]byte       // VisitPayload gathers a word split by the ring's wrap here
	pid    int           // the peer's process, which payloads handed over in place are read from (direct.go)
	pipes  pipes         // for the heads of payloads handed over in place (splice.go)

	// The calls take no lock: one was a tenth of an 8-byte AllReduce
	// (every call's read lock an atomic add, and the unlock another),
	// and a call must never touch memory that is gone only because
	// Close, which unmaps it, may not run while a call does (Shut, which
	// leaves it mapped, may).
	closed    atomic.Bool
	shutOnce  sync.Once
	connErr   error // of closing conn, by Shut
	closeOnce sync.Once
	watchDone chan struct{}

	// Sender state, owned by the one sending goroutine.
	hdrOut  [wire.HeaderSize + directRefSize]byte // a header, and the reference of a direct payload
	posted  uint64                                // direct payloads handed over, for AwaitAcks
	unacked [][]byte                              // those handed over since WaitPosted last returned, which the peer may ask this side to write (share.go)
	writer  shm.ShareWriter                       // l.writeShare, made once; nil when this side cannot write the peer's memory
	sendErr error                                 // sticky: a failed Send may have left half a frame

	// Receiver state, owned by the one receiving goroutine.
	hdrIn       [wire.HeaderSize + directRefSize]byte
	pending     int              // payload bytes of the last header still unread
	inFrame     bool             // a header was read and its payload not yet consumed
	boxed       []byte           // the last frame's payload when it came in a fast box (until consumed)
	remote      uint64           // the last frame's payload is direct, at this address in the peer (0: in the ring)
	spliced     int              // of which the first spliced bytes are in the pipe (splice.go)
	mapped      []byte           // or all of it is in this side's mapping of a region of the peer's (direct.go)
	regions     *shm.PeerRegions // the peer's regions mapped here, when l.pid != 0
	senderWaits bool             // and the sender only waits for it (flagSenderWaits): offer it a share
	share       bool             // this side offers shares at all (DialConfig.NoShare)
	scratch     []byte           // VisitPayload reads direct payloads into this, piece by piece
	recvErr     error
}

var (
	_ transport.Link           = (*Link)(nil)
	_ transport.PayloadVisitor = (*Link)(nil)
	_ transport.TrySender      = (*Link)(nil)
	_ transport.Poster         = (*Link)(nil)
)

// newLink makes the link over the mapped rings. With direct, it first
// tries to prove that this side can read the peer's memory, so that the
// peer may hand large payloads over in place (direct.go); the peer must have
// published its address in rx by then. The link owns p from now on. share
// says whether this side offers shares of its copies (share.go).
func newLink(self, peer int, tag uint32, seg *shm.Segment, tx, rx *shm.Ring, conn *net.UnixConn, direct bool, p pipes, share bool) *Link {
	l := &Link{
		self: self, peer: peer, tag: tag,
		seg: seg, tx: tx, rx: rx, conn: conn, pipes: p, share: share,
		watchDone: make(chan struct{}),
	}
	if direct {
		l.pid = probePeer(conn, rx)
	}
	if l.pid != 0 {
		l.writer = l.writeShare
		l.regions = shm.NewPeerRegions(l.pid)
	}
	go func() {
		defer close(l.watchDone)
		shm.Watch(conn, tx, rx)
	}()
	return l
}

// Self returns this side's rank.
func (l *Link) Self() int { return l.self }

// Peer returns the rank at the other end.
func (l *Link) Peer() int { return l.peer }

// Tag returns the tag the dialer gave (DialConfig.Tag).
func (l *Link) Tag() uint32 { return l.tag }

// RingBytes returns the data capacity of each direction.
func (l *Link) RingBytes() int { return l.tx.Cap() }

func (l *Link) sendFail(err error) error {
	return fmt.Errorf("shmlink: rank %d send to rank %d: %w", l.self, l.peer, err)
}

func (l *Link) recvFail(err error) error {
	return fmt.Errorf("shmlink: rank %d recv from rank %d: %w", l.self, l.peer, err)
}

// Send writes the frame h, p. It returns once p is in the ring (the
// receiver may not have read it yet), so p may be reused. After an error
// the link cannot send any more. (TryPost hands a payload over in place
// instead.)
func (l *Link) Send(ctx context.Context, h *wire.Header, p []byte) error {
	if int(h.Len) != len(p) {
		return l.sendFail(fmt.Errorf("header says %d payload bytes, got %d", h.Len, len(p)))
	}
	if err := l.sendReady(); err != nil {
		return err
	}
	return l.sent(l.send(ctx, h, p))
}

// sendReady returns why the link cannot send, nil when it can.
func (l *Link) sendReady() error {
	if l.closed.Load() {
		return l.sendFail(ErrClosed)
	}
	return l.sendErr
}

// sent makes a send's error sticky: a failed send may have left half a
// frame in the ring.
func (l *Link) sent(err error) error {
	if err == nil {
		return nil
	}
	if l.closed.Load() {
		err = ErrClosed
	}
	l.sendErr = l.sendFail(err)
	return l.sendErr
}

// TrySend sends the frame h, p when a fast box or the ring has room for all
// of it now, and reports whether it did (see transport.TrySender).
func (l *Link) TrySend(ctx context.Context, h *wire.Header, p []byte) (bool, error) {
	n := wire.HeaderSize + len(p)
	room := !l.closed.Load() && (l.tx.FastSlot(n) != nil || l.tx.HasRoom(n))
	if !room {
		return false, nil
	}
	// Only this goroutine produces into tx, so the room cannot shrink:
	// Send will not wait.
	return true, l.Send(ctx, h, p)
}

// send writes the frame into a fast box when it fits one and one is free
// (shm's fastbox.go: the receiver learns of it and fetches it in one
// transfer), else into the ring.
func (l *Link) send(ctx context.Context, h *wire.Header, p []byte) error {
	n := wire.HeaderSize + len(p)
	if box := l.tx.FastSlot(n); box != nil {
		h.Encode(box)
		copy(box[wire.HeaderSize:], p)
		l.tx.CommitFast(n)
		return nil
	}
	hdr := l.hdrOut[:wire.HeaderSize]
	h.Encode(hdr)
	if n <= smallFrame {
		b, err := l.tx.Reserve(ctx, n)
		if err != nil {
			return err
		}
		if len(b) == n {
			// cpu.Copy, not copy: Go's copy into ring memory that the
			// peer's core has just read made a 32 KiB frame cost twice
			// what the ring's own writes cost (cpu.Copy's doc).
			cpu.Copy(b[copy(b, hdr):], p)
			l.tx.Commit(n)
			return nil
		}
		// Not contiguous (the ring wraps, or is partly full): in pieces.
	}
	if err := l.tx.Write(ctx, hdr); err != nil {
		return err
	}
	return l.tx.Write(ctx, p)
}

// RecvHeader reads the next frame's header into h. The payload of the
// previous frame must have been consumed.
func (l *Link) RecvHeader(ctx context.Context, h *wire.Header) error {
	if err := l.recvReady(); err != nil {
		return err
	}
	if l.inFrame && l.pending > 0 {
		return l.recvFail(fmt.Errorf("%d payload bytes of the previous frame not consumed", l.pending))
	}
	for {
		box, inRing := l.rx.NextFrame()
		if box != nil {
			return l.recvBoxed(h, box)
		}
		if inRing {
			break
		}
		if err := l.rx.AwaitFrame(ctx); err != nil {
			return l.recvBroken(err)
		}
	}
	hdr := l.hdrIn[:wire.HeaderSize]
	if err := l.rx.Read(ctx, hdr); err != nil {
		return l.recvBroken(err)
	}
	flags, err := h.DecodeFlagged(hdr)
	if err != nil {
		// The stream is out of step: nothing after this can be trusted.
		return l.recvBroken(err)
	}
	if err := l.readRef(ctx, h, flags); err != nil {
		return l.recvBroken(err)
	}
	l.senderWaits = flags&flagSenderWaits != 0
	l.pending, l.inFrame = int(h.Len), true
	return nil
}

// recvBoxed takes the header of a frame that came in a fast box; its
// payload stays in the box until it is consumed, and an empty one frees the
// box at once.
func (l *Link) recvBoxed(h *wire.Header, box []byte) error {
	if err := h.Decode(box); err != nil {
		return l.recvBroken(err) // flags too: a fast box never holds a direct payload
	}
	if payload := box[wire.HeaderSize:]; int(h.Len) != len(payload) {
		return l.recvBroken(fmt.Errorf("%w: a fast box of %d payload bytes whose header says %d", wire.ErrBadFrame, len(payload), h.Len))
	}
	l.remote, l.pending, l.inFrame = 0, int(h.Len), true
	if h.Len == 0 {
		l.rx.ReleaseFast()
		return nil
	}
	l.boxed = box[wire.HeaderSize:]
	return nil
}

// consumedBoxed frees the fast box of the frame whose payload was just
// consumed.
func (l *Link) consumedBoxed() {
	l.boxed = nil
	l.rx.ReleaseFast()
	l.pending, l.inFrame = 0, false
}

// RecvPayload copies the payload of the frame whose header was read last
// into p; len(p) must equal that header's Len.
func (l *Link) RecvPayload(ctx context.Context, p []byte) error {
	if err := l.payloadReady(len(p)); err != nil {
		return err
	}
	if l.remote != 0 {
		if err := l.readShared(ctx, p); err != nil {
			return l.recvBroken(err)
		}
		return l.consumedDirect()
	}
	if l.boxed != nil {
		copy(p, l.boxed)
		l.consumedBoxed()
		return nil
	}
	if err := l.rx.Read(ctx, p); err != nil {
		return l.recvBroken(err)
	}
	l.pending, l.inFrame = 0, false
	return nil
}

// VisitPayload shows the payload of the frame whose header was read last
// in place, in the ring, piece by piece: fn(off, b) for consecutive pieces
// that add up to n bytes (n must equal the header's Len). b is valid only
// during the call and must not be written; fn must not call Close. With
// n == 0, fn is not called.
//
// Every piece but the last is a whole number of 8-byte words (so off is
// always a multiple of 8), so a piece never splits an element of up to 8
// bytes and a reduction never has to stitch one together. The ring itself
// gives no such promise (a payload can start anywhere, and the data area
// wraps), so the few bytes of a word that straddles a piece boundary are
// copied into a small buffer and shown as a piece of their own.
func (l *Link) VisitPayload(ctx context.Context, n int, fn func(off int, b []byte)) error {
	if err := l.payloadReady(n); err != nil {
		return err
	}
	if l.remote != 0 {
		return l.visitDirect(n, fn)
	}
	if l.boxed != nil {
		fn(0, l.boxed)
		l.consumedBoxed()
		return nil
	}
	piece := min(l.rx.Cap()/4, maxPiece)
	word := l.word[:] // in the Link: a local array handed to fn would escape, one allocation per call
	for off := 0; off < n; {
		// The whole rest of the payload is coming: sleep until a good
		// part of it is there, not for every piece.
		b, err := l.rx.PeekNeed(ctx, n-off, min(n-off, piece))
		if err != nil {
			return l.recvBroken(err)
		}
		k := len(b)
		if off+k < n {
			k &^= 7
		}
		if k > 0 {
			fn(off, b[:k])
			l.rx.Release(k)
		} else {
			// Less than a word before the wrap (or before the
			// producer's last commit): gather the word, then go on.
			w := word[:min(8, n-off)]
			if err := l.rx.Read(ctx, w); err != nil {
				return l.recvBroken(err)
			}
			fn(off, w)
			k = len(w)
		}
		off += k
		l.pending -= k
	}
	l.inFrame = false
	return nil
}

func (l *Link) recvReady() error {
	if l.closed.Load() {
		return l.recvFail(ErrClosed)
	}
	return l.recvErr
}

func (l *Link) payloadReady(n int) error {
	if err := l.recvReady(); err != nil {
		return err
	}
	if !l.inFrame {
		return l.recvFail(errors.New("no frame header read"))
	}
	if n != l.pending {
		return l.recvFail(fmt.Errorf("payload of %d bytes, header says %d", n, l.pending))
	}
	return nil
}

func (l *Link) recvBroken(err error) error {
	if l.closed.Load() {
		err = ErrClosed
	}
	l.recvErr = l.recvFail(err)
	return l.recvErr
}

// Shut fails this side's pending and later calls with ErrClosed; the peer
// reads what was sent before and then fails. It leaves the segment mapped,
// so it may be called while calls run, from any goroutine, more than once.
func (l *Link) Shut() {
	l.shutOnce.Do(func() {
		l.closed.Store(true)
		l.tx.Close() // wakes our blocked calls and the peer's
		l.rx.Close()
		l.connErr = l.conn.Close()
	})
}

// Warm reads every page of the link's segment (shm.Segment.Prefault), so
// that the rings run from now on at the speed they will keep: a first pass
// over fresh pages runs many times slower, and a caller timing them would
// be misled. Set-up already did it, but for a lazy segment.
func (l *Link) Warm() { l.seg.Prefault() }

// Close shuts the link and unmaps its segment. No call may be running on
// the link: Shut first makes pending calls return. Close is idempotent.
func (l *Link) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.Shut()
		<-l.watchDone
		l.pipes.close()
		if l.regions != nil {
			l.regions.Close()
		}
		err = l.connErr
		if serr := l.seg.Close(); err == nil {
			err = serr
		}
		if err != nil {
			err = fmt.Errorf("shmlink: rank %d close link to rank %d: %w", l.self, l.peer, err)
		}
	})
	return err
}

package shm

import (
	"context"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/hcclrun/hcclrun/internal/cpu"
)

// Ring header layout, in bytes from the start of the ring. The producer's
// and the consumer's counters live on cache lines of their own (128 bytes
// apart, because the adjacent-line prefetcher pulls lines in pairs), so the
// two sides do not invalidate each other's line on every update. The data
// area starts at a page boundary.
const (
	offMagic       = 0   // uint32, written last by NewRing
	offVersion     = 4   // uint32
	offCapacity    = 8   // uint64, bytes in the data area, a power of two
	offProdAddr    = 16  // uint64: this header's address in the producer's process (direct.go)
	offDirect      = 24  // uint32: 1 once the consumer has read the producer's memory directly
	offHead        = 128 // uint64: bytes ever committed; written by the producer only
	offTail        = 256 // uint64: bytes ever released; written by the consumer only
	offDataEv      = 384 // uint32 futex word the consumer sleeps on; bumped to wake it
	offConsWaiting = 388 // uint32: 1 while the consumer is (about to be) asleep
	offConsWant    = 392 // uint64: wake the sleeping consumer once head reaches this
	offSpaceEv     = 512 // uint32 futex word the producer sleeps on
	offProdWaiting = 516 // uint32: 1 while the producer is (about to be) asleep
	offProdWant    = 520 // uint64: wake the sleeping producer once tail reaches this
	offClosed      = 640 // uint32: 1 once either side closed the ring
	offAcked       = 768 // uint64: payloads handed over in place that the consumer has read
	offAckEv       = 776 // uint32 futex word the producer sleeps on for an acknowledgement
	offAckWaiting  = 780 // uint32: 1 while the producer is (about to be) asleep for one
	// 896 and up: the fast boxes (fastbox.go); 3072 and up: shared
	// reads (share.go).

	// RingHeaderSize is the space a ring's header takes before its data.
	RingHeaderSize = 4096

	ringMagic   = 0x474e5248 // "HRNG"
	ringVersion = 5

	// MinRingCapacity is the smallest data area NewRing accepts. Anything
	// smaller than a frame header would make every frame wrap.
	MinRingCapacity = 256

	// maxChunk bounds how many bytes Write and Read move between two
	// counter updates, so that the other side can work on the first part
	// of a large transfer while this side copies the next (a pipeline of
	// two cores rather than a relay). 128 KiB keeps the counter traffic
	// negligible (one cache-line transfer per ~10 us of copying).
	maxChunk = 128 << 10
)

// RingBytes returns the bytes a ring with the given data capacity occupies
// in a segment: header plus data.
func RingBytes(capacity int) int { return RingHeaderSize + capacity }

// Ring is one process's handle on a single-producer single-consumer byte
// ring in shared memory. One goroutine may act as producer (Reserve,
// Commit, Write) while another acts as consumer (Peek, Release, Read);
// usually the two sides are in different processes, each with its own Ring.
// Close and Abort may be called concurrently with anything.
type Ring struct {
	data []byte
	mask uint64
	cap  uint64

	head, tail                   *atomic.Uint64
	consWant, prodWant           *atomic.Uint64
	dataEv, consWaiting          *atomic.Uint32
	spaceEv, prodWaiting, closed *atomic.Uint32

	// Payloads handed over in place (direct.go).
	hdr               []byte
	prodAddr, acked   *atomic.Uint64
	direct            *atomic.Uint32
	ackEv, ackWaiting *atomic.Uint32

	fast   fastBoxes  // small frames beside the ring (fastbox.go)
	shares shareWords // shared reads (share.go)

	chunk  int
	policy WaitPolicy // this side's waits, resolved (wait.go)

	local atomic.Bool           // Close was called in this process
	cause atomic.Pointer[error] // set by Abort

	_ [64]byte
	// Producer-local state: the producer's own counter and the last
	// consumer counter it read. Reading the shared tail only when the
	// cached one says there is not room enough keeps the consumer's line
	// out of the producer's cache while the ring has room. The same for
	// the fast boxes: messages posted, and taken as last read.
	wHead, wTail      uint64
	wFast, wFastTaken uint64
	wShareBroken      bool // a piece of a shared read could not be written (share.go)
	_                 [64]byte
	// Consumer-local state, likewise, and the fast-box messages taken.
	rTail, rHead uint64
	rFast        uint64
	// The consumer's offers of shared reads (share.go): how many it made,
	// the current one's bytes and piece, the producer's pieces awaited.
	rShareGen, rShared       uint64
	rShareBytes, rSharePiece int
	_                        [64]byte
}

// NewRing lays out an empty ring with capacity data bytes at the start of b
// (which must hold RingBytes(capacity)) and returns a handle on it whose
// waits follow wait. The creator calls NewRing before the peer can see the
// memory; the peer calls OpenRing on its own mapping, with a policy of its
// own.
func NewRing(b []byte, capacity int, wait WaitPolicy) (*Ring, error) {
	if capacity < MinRingCapacity || bits.OnesCount(uint(capacity)) != 1 {
		return nil, fmt.Errorf("shm: ring capacity %d: want a power of two >= %d", capacity, MinRingCapacity)
	}
	if len(b) < RingBytes(capacity) {
		return nil, fmt.Errorf("shm: ring of %d bytes needs %d bytes of memory, have %d", capacity, RingBytes(capacity), len(b))
	}
	hdr := b[:RingHeaderSize]
	for _, off := range []int{offProdAddr, offHead, offTail, offConsWant, offProdWant, offAcked,
		offShareSrc, offShareDst, offShareBytes, offSharePiece, offShareCursor, offShareDone} {
		word64(hdr, off).Store(0)
	}
	for _, off := range []int{offDirect, offDataEv, offConsWaiting, offSpaceEv, offProdWaiting, offClosed, offAckEv, offAckWaiting,
		offShareEv, offShareWaiting, offShareBroken} {
		word32(hdr, off).Store(0)
	}
	attachFastBoxes(hdr).clear()
	word64(hdr, offCapacity).Store(uint64(capacity))
	word32(hdr, offVersion).Store(ringVersion)
	word32(hdr, offMagic).Store(ringMagic)
	return attach(b, capacity, wait), nil
}

// OpenRing returns a handle on a ring that NewRing laid out at the start of
// b, in this or another process, whose waits follow wait.
func OpenRing(b []byte, wait WaitPolicy) (*Ring, error) {
	if len(b) < RingHeaderSize {
		return nil, fmt.Errorf("shm: open ring: %d bytes is smaller than a ring header", len(b))
	}
	if m := word32(b, offMagic).Load(); m != ringMagic {
		return nil, fmt.Errorf("shm: open ring: bad magic %#x", m)
	}
	if v := word32(b, offVersion).Load(); v != ringVersion {
		return nil, fmt.Errorf("shm: open ring: version %d, want %d", v, ringVersion)
	}
	c := word64(b, offCapacity).Load()
	if c < MinRingCapacity || bits.OnesCount64(c) != 1 || c > uint64(len(b)-RingHeaderSize) {
		return nil, fmt.Errorf("shm: open ring: capacity %d does not fit %d bytes", c, len(b))
	}
	return attach(b, int(c), wait), nil
}

func attach(b []byte, capacity int, wait WaitPolicy) *Ring {
	hdr := b[:RingHeaderSize]
	r := &Ring{
		data:        b[RingHeaderSize : RingHeaderSize+capacity : RingHeaderSize+capacity],
		mask:        uint64(capacity - 1),
		cap:         uint64(capacity),
		head:        word64(hdr, offHead),
		tail:        word64(hdr, offTail),
		consWant:    word64(hdr, offConsWant),
		prodWant:    word64(hdr, offProdWant),
		dataEv:      word32(hdr, offDataEv),
		consWaiting: word32(hdr, offConsWaiting),
		spaceEv:     word32(hdr, offSpaceEv),
		prodWaiting: word32(hdr, offProdWaiting),
		closed:      word32(hdr, offClosed),
		hdr:         hdr,
		prodAddr:    word64(hdr, offProdAddr),
		acked:       word64(hdr, offAcked),
		direct:      word32(hdr, offDirect),
		ackEv:       word32(hdr, offAckEv),
		ackWaiting:  word32(hdr, offAckWaiting),
		fast:        attachFastBoxes(hdr),
		shares:      attachShareWords(hdr),
		chunk:       min(capacity/4, maxChunk),
		policy:      wait.resolved(),
	}
	r.wHead = r.head.Load()
	r.wTail = r.tail.Load()
	r.rTail = r.tail.Load()
	r.rHead = r.head.Load()
	return r
}

// Cap returns the capacity of the data area in bytes.
func (r *Ring) Cap() int { return int(r.cap) }

// HasRoom reports whether n bytes of the ring are free now (not
// necessarily contiguous), so that writing them will not wait. Only the
// producer may call it. It reads the consumer's counter only when the last value it
// saw leaves too little room, so that a producer far ahead of a full ring
// does not pull the consumer's cache line for every small frame.
func (r *Ring) HasRoom(n int) bool {
	if r.cap-(r.wHead-r.wTail) >= uint64(n) {
		return true
	}
	r.wTail = r.tail.Load()
	return r.cap-(r.wHead-r.wTail) >= uint64(n)
}

// Buffered returns how many bytes are committed and not yet released. It is
// a snapshot; either side may call it.
func (r *Ring) Buffered() int { return int(r.head.Load() - r.tail.Load()) }

// Unread returns, without waiting and without consuming anything, the
// committed bytes the consumer has not read yet: the contiguous run from its
// read position (which ends early where the data area wraps) and how many
// there are in all. Only the consumer may call it; the run stays valid until
// it releases those bytes.
func (r *Ring) Unread() (run []byte, total int) {
	r.rHead = r.head.Load()
	avail := r.rHead - r.rTail
	off := r.rTail & r.mask
	n := min(avail, r.cap-off)
	return r.data[off : off+n : off+n], int(avail)
}

// Close marks the ring closed, for this process and for the peer, and wakes
// every waiter on both sides. Calls by this process then fail with
// ErrClosed; the peer's consumer still reads what was committed before,
// then gets ErrPeerClosed, and the peer's producer fails at once. Close is
// idempotent. The memory must still be mapped.
func (r *Ring) Close() {
	r.local.Store(true)
	r.closed.Store(1)
	r.wakeAll()
}

// Abort records that the peer is gone (cause says how it was noticed: EOF
// on the liveness socket, a reset, ...). This process's consumer still
// reads what was committed, then gets an error wrapping ErrPeerGone and
// cause; its producer fails at once. The first cause wins.
func (r *Ring) Abort(cause error) {
	err := fmt.Errorf("%w: %w", ErrPeerGone, cause)
	r.cause.CompareAndSwap(nil, &err)
	r.closed.Store(1)
	r.wakeAll()
}

// wakeAll wakes both sides unconditionally: closing is rare and must not
// depend on the waiting flags, which a sleeper may be about to set.
func (r *Ring) wakeAll() {
	r.dataEv.Add(1)
	futexWakeUp(r.dataEv, 1<<30)
	r.spaceEv.Add(1)
	futexWakeUp(r.spaceEv, 1<<30)
	r.ackEv.Add(1)
	futexWakeUp(r.ackEv, 1<<30)
	r.shares.ev.Add(1)
	futexWakeUp(r.shares.ev, 1<<30)
}

// closedErr returns why the ring cannot be used, nil while it can. A
// consumer calls it only when nothing is left to read.
func (r *Ring) closedErr() error {
	if r.local.Load() {
		return ErrClosed
	}
	if r.closed.Load() == 0 {
		return nil
	}
	if c := r.cause.Load(); c != nil {
		return *c
	}
	return ErrPeerClosed
}

// Reserve returns writable space in the ring, in place: between 1 and max
// bytes, contiguous (a reservation stops at the end of the data area). It
// waits while the ring is full. Nothing is visible to the consumer until
// Commit. Calling Reserve again without Commit returns the same space.
func (r *Ring) Reserve(ctx context.Context, max int) ([]byte, error) {
	return r.ReserveNeed(ctx, 1, max)
}

// ReserveNeed is Reserve for a producer that will write at least need bytes
// before it stops (the rest of a message): if it has to sleep, it asks the
// consumer to wake it only once min(need, Cap()/2) bytes are free rather
// than at the first free byte. A wake-up costs tens of microseconds
// (docs/measurements.md#spin-and-yield), so a large transfer through a
// full ring would otherwise pay one per piece the consumer releases. It
// cannot deadlock: the consumer must release that much anyway for the
// producer to finish.
func (r *Ring) ReserveNeed(ctx context.Context, need, max int) ([]byte, error) {
	if max <= 0 {
		return nil, fmt.Errorf("shm: reserve %d bytes", max)
	}
	for {
		if err := r.closedErr(); err != nil {
			return nil, err
		}
		free := r.cap - (r.wHead - r.wTail)
		if free < uint64(max) {
			r.wTail = r.tail.Load()
			free = r.cap - (r.wHead - r.wTail)
		}
		if free > 0 {
			off := r.wHead & r.mask
			n := min(free, r.cap-off, uint64(max))
			return r.data[off : off+n : off+n], nil
		}
		// Wake when tail has moved far enough for the free space to
		// reach the wanted amount.
		want := r.wHead - r.cap + r.wantBytes(need)
		if err := r.await(ctx, false, want); err != nil {
			return nil, err
		}
	}
}

// wantBytes bounds a caller's need to half the ring: a sleeper must be
// woken while the other side can still make progress.
func (r *Ring) wantBytes(need int) uint64 {
	return uint64(max(1, min(need, int(r.cap/2))))
}

// Commit publishes the first n bytes of the last reservation to the
// consumer and wakes it if it sleeps.
func (r *Ring) Commit(n int) {
	if n <= 0 {
		return
	}
	if uint64(n) > r.cap-(r.wHead-r.wTail) {
		panic("shm: commit beyond the reservation")
	}
	r.wHead += uint64(n)
	r.head.Store(r.wHead)
	if r.consWaiting.Load() != 0 && r.wHead >= r.consWant.Load() {
		wake(r.consWaiting, r.dataEv)
	}
}

// Write copies all of p into the ring, in pieces as space frees up. On
// error some prefix of p may have been committed.
func (r *Ring) Write(ctx context.Context, p []byte) error {
	for len(p) > 0 {
		b, err := r.ReserveNeed(ctx, len(p), min(len(p), r.chunk))
		if err != nil {
			return err
		}
		n := cpu.Copy(b, p)
		r.Commit(n)
		p = p[n:]
	}
	return nil
}

// Peek returns readable bytes in place: between 1 and max, contiguous. It
// waits while the ring is empty. The bytes stay valid and unchanged until
// Release; reduce straight from them to avoid a copy.
func (r *Ring) Peek(ctx context.Context, max int) ([]byte, error) {
	return r.PeekNeed(ctx, 1, max)
}

// PeekNeed is Peek for a consumer that will read at least need bytes
// before it stops (the rest of a message): if it has to sleep, it asks the
// producer to wake it only once min(need, Cap()/2) bytes are readable,
// which saves wake-ups while a large transfer streams (see ReserveNeed).
func (r *Ring) PeekNeed(ctx context.Context, need, max int) ([]byte, error) {
	if max <= 0 {
		return nil, fmt.Errorf("shm: peek %d bytes", max)
	}
	for {
		if r.local.Load() {
			return nil, ErrClosed
		}
		avail := r.rHead - r.rTail
		if avail < uint64(max) {
			r.rHead = r.head.Load()
			avail = r.rHead - r.rTail
		}
		if avail > 0 {
			off := r.rTail & r.mask
			n := min(avail, r.cap-off, uint64(max))
			return r.data[off : off+n : off+n], nil
		}
		if r.closed.Load() != 0 {
			// The producer commits before it closes: look at head once
			// more after seeing the flag, so that nothing is lost.
			if r.rHead = r.head.Load(); r.rHead != r.rTail {
				continue
			}
			return nil, r.closedErr()
		}
		if err := r.await(ctx, true, r.rTail+r.wantBytes(need)); err != nil {
			return nil, err
		}
	}
}

// Release gives the first n bytes returned by Peek back to the producer and
// wakes it if it sleeps.
func (r *Ring) Release(n int) {
	if n <= 0 {
		return
	}
	if uint64(n) > r.rHead-r.rTail {
		panic("shm: release beyond what was peeked")
	}
	r.rTail += uint64(n)
	r.tail.Store(r.rTail)
	if r.prodWaiting.Load() != 0 && r.rTail >= r.prodWant.Load() {
		wake(r.prodWaiting, r.spaceEv)
	}
}

// Read fills all of p from the ring, waiting for the producer as needed. On
// error some prefix of p may have been consumed.
func (r *Ring) Read(ctx context.Context, p []byte) error {
	for len(p) > 0 {
		b, err := r.PeekNeed(ctx, len(p), min(len(p), r.chunk))
		if err != nil {
			return err
		}
		n := cpu.Copy(p, b)
		r.Release(n)
		p = p[n:]
	}
	return nil
}

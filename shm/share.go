package shm

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Shared reads: the producer writes part of a payload it handed over in
// place.
//
// A payload handed over in place (direct.go) is copied by the consumer's
// core alone while the producer's core waits for the acknowledgement. When
// the producer only sends (a Broadcast's root), that is half the machine
// idle: so the consumer may offer the producer a share of the work (the
// caller knows when: shmlink offers when the producer said so with the
// payload). It cuts the part of the payload it reads
// in place into pieces and publishes the offer (OfferShare): where the
// payload is in the producer's process, where it goes in the consumer's,
// and the pieces. Then both take pieces, the consumer from the back
// (ClaimBack) and the producer, while it waits for acknowledgements
// (AwaitAcks), from the front, writing them into the consumer's process
// with WriteProcess (process_vm_writev). They meet wherever their speeds
// put them, so an offer costs at most a piece more than the consumer
// reading alone (and a system call per piece): a producer busy elsewhere
// takes nothing. At the end the consumer waits for the producer's last
// piece (AwaitShare). Shared, a payload of 256 KiB to 4 MiB is copied in
// a third to two thirds of the consumer's time alone
// (docs/measurements.md#shared-reads).
//
// The offer and the claims live in one word (the cursor), which both sides
// change with compare-and-swap: the offer's generation (16 bits), the
// pieces the producer has taken from the front (24) and the index past the
// last piece nobody has taken from the back (24). The generation keeps a
// producer that read an older offer's fields from taking a piece of the
// next one. The producer counts the pieces it has written in a word of
// its own (done), cumulative over offers, which the consumer waits on;
// a producer that cannot write (the kernel refuses, or the piece is not
// of a payload it posted) still counts its piece and sets shareBroken, and
// the consumer then reads the producer's pieces itself and offers no
// more.
const (
	offShareSrc    = 3072 // uint64: the payload's part, at its address in the producer; written by the consumer
	offShareDst    = 3080 // uint64: where that part goes in the consumer; written by the consumer
	offShareBytes  = 3088 // uint64: the part's length
	offSharePiece  = 3096 // uint64: bytes per piece
	offShareCursor = 3104 // uint64: generation, front, back (above); compare-and-swap by both sides

	offShareDone    = 3200 // uint64: pieces the producer has written, ever; written by the producer
	offShareEv      = 3208 // uint32 futex word the consumer sleeps on for the producer's pieces
	offShareWaiting = 3212 // uint32: 1 while the consumer is (about to be) asleep for them
	offShareBroken  = 3216 // uint32: 1 once the producer failed to write a piece

	cursorPieceBits = 24
	cursorPieceMask = 1<<cursorPieceBits - 1

	// MaxSharePieces is the most pieces an offer may have.
	MaxSharePieces = cursorPieceMask
)

// ErrShareBroken says that the producer could not write its pieces of a
// shared read: the consumer must read them itself.
var ErrShareBroken = errors.New("shm: the producer could not write its share of a payload")

// shareWords are a ring's words of shared reads (the offsets above).
type shareWords struct {
	src, dst, bytes, piece, cursor, done *atomic.Uint64
	ev, waiting, broken                  *atomic.Uint32
}

func attachShareWords(hdr []byte) shareWords {
	return shareWords{
		src: word64(hdr, offShareSrc), dst: word64(hdr, offShareDst),
		bytes: word64(hdr, offShareBytes), piece: word64(hdr, offSharePiece),
		cursor: word64(hdr, offShareCursor), done: word64(hdr, offShareDone),
		ev: word32(hdr, offShareEv), waiting: word32(hdr, offShareWaiting),
		broken: word32(hdr, offShareBroken),
	}
}

func cursorOf(gen uint64, front, back int) uint64 {
	return gen<<(2*cursorPieceBits) | uint64(front)<<cursorPieceBits | uint64(back)
}

func splitCursor(c uint64) (gen uint64, front, back int) {
	return c >> (2 * cursorPieceBits), int(c >> cursorPieceBits & cursorPieceMask), int(c & cursorPieceMask)
}

// OfferShare offers the producer pieces of piece bytes of the n-byte part
// of the payload being read that lies at src in the producer's process and
// goes to dst in this one, and returns how many pieces there are. The
// consumer then takes pieces with ClaimBack until it gets none and calls
// AwaitShare. Only the consumer may call it, for a payload handed over in
// place and not yet acknowledged; n and piece must be positive and the
// pieces at most MaxSharePieces.
func (r *Ring) OfferShare(src, dst uint64, n, piece int) int {
	if n <= 0 || piece <= 0 || (n+piece-1)/piece > MaxSharePieces {
		panic("shm: bad share offer")
	}
	pieces := (n + piece - 1) / piece
	r.shares.src.Store(src)
	r.shares.dst.Store(dst)
	r.shares.bytes.Store(uint64(n))
	r.shares.piece.Store(uint64(piece))
	r.rShareGen++
	r.rShareBytes, r.rSharePiece = n, piece
	// The fields before the cursor: a producer that sees the offer sees
	// them (a locked exchange on x86, as every Store of sync/atomic).
	r.shares.cursor.Store(cursorOf(r.rShareGen&0xffff, 0, pieces))
	// The producer may sleep in AwaitAcks: its sleeper also wakes for an
	// offer.
	wake(r.ackWaiting, r.ackEv)
	return pieces
}

// ClaimBack takes the last piece of the current offer that nobody has
// taken, for the consumer to read: its offset in the part and its length.
// It reports false when the producer has taken all the others.
func (r *Ring) ClaimBack() (off, n int, ok bool) {
	for {
		c := r.shares.cursor.Load()
		gen, front, back := splitCursor(c)
		if front >= back {
			return 0, 0, false
		}
		if r.shares.cursor.CompareAndSwap(c, cursorOf(gen, front, back-1)) {
			off = (back - 1) * r.rSharePiece
			return off, min(r.rSharePiece, r.rShareBytes-off), true
		}
	}
}

// AwaitShare ends the current offer, once ClaimBack found nothing left: it
// waits until the producer has written every piece it took, and returns
// how many bytes from the front of the part those are. It returns
// ErrShareBroken when the producer could not write them (the consumer then
// reads them itself, and offers no more: see ShareBroken), and an error
// when the ring closed or ctx ended, after waiting a while longer for a
// producer still writing.
func (r *Ring) AwaitShare(ctx context.Context) (front int, err error) {
	_, taken, _ := splitCursor(r.shares.cursor.Load())
	done := r.shares.done
	want := r.rShared + uint64(taken)
	s := sleeper{ev: r.shares.ev, waiting: r.shares.waiting, counter: done, want: want}
	for done.Load() < want {
		if r.closed.Load() != 0 || r.local.Load() {
			err = r.closedErr()
			break
		}
		if err = r.wait(ctx, &s, func() bool { return done.Load() >= want }); err != nil {
			break
		}
	}
	if err != nil {
		if !errors.Is(err, ErrPeerGone) {
			// The producer may still be writing a piece into the
			// caller's memory, which the caller will reuse: give it
			// the time a piece takes, many times over.
			for deadline := time.Now().Add(shareDrain); done.Load() < want && time.Now().Before(deadline); {
				time.Sleep(50 * time.Microsecond)
			}
		}
		return 0, err
	}
	r.rShared = want
	front = min(taken*r.rSharePiece, r.rShareBytes)
	if r.ShareBroken() {
		return front, ErrShareBroken
	}
	return front, nil
}

// shareDrain is how long AwaitShare waits, after an error, for the
// producer's piece in flight.
const shareDrain = time.Second

// ShareBroken reports whether the producer ever failed to write its share:
// the consumer should not offer again.
func (r *Ring) ShareBroken() bool { return r.shares.broken.Load() != 0 }

// ShareWriter writes n bytes of a payload, at src in the producer's
// process, to dst in the consumer's (WriteProcess); it is the producer's
// part of a shared read, given to AwaitAcks.
type ShareWriter func(dst, src uint64, n int) error

// shareOffered reports whether the consumer offers pieces nobody has taken.
func (r *Ring) shareOffered() bool {
	_, front, back := splitCursor(r.shares.cursor.Load())
	return front < back
}

// takeShares takes the consumer's offered pieces from the front, one at a
// time, and writes each with write, until none is left.
func (r *Ring) takeShares(write ShareWriter) {
	w := r.shares
	for {
		c := w.cursor.Load()
		gen, front, back := splitCursor(c)
		if front >= back {
			return
		}
		src, dst := w.src.Load(), w.dst.Load()
		n, piece := int(w.bytes.Load()), int(w.piece.Load())
		if !w.cursor.CompareAndSwap(c, cursorOf(gen, front+1, back)) {
			continue
		}
		// The swap succeeded on the offer whose fields were read: they
		// were stored before its cursor, and a next offer changes the
		// generation.
		off := front * piece
		if off >= n || r.wShareBroken || write(dst+uint64(off), src+uint64(off), min(piece, n-off)) != nil {
			r.wShareBroken = true
			w.broken.Store(1)
		}
		w.done.Add(1)
		wake(w.waiting, w.ev)
	}
}

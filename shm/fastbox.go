package shm

import (
	"context"
	"encoding/binary"
	"sync/atomic"

	"github.com/hcclrun/hcclrun/internal/cpu"
)

// Fast boxes carry small frames beside the ring, one frame per slot, the
// way Open MPI's vader BTL has its "fast boxes": the slot's word sits with
// the frame, so a receiver that polls it sees the frame's arrival and, for
// a frame of up to 56 bytes, has fetched it in the same cache line.
// Through the ring the same frame costs about twice the cross-core
// transfers: the consumer polls head (a line the producer wrote), then
// fetches the data line, then writes tail, and the producer takes head's
// line back for its next commit; a ping-pong through boxes takes half the
// time of one through the ring (docs/measurements.md#fast-boxes).
//
// A slot is 128 bytes, two cache lines that the adjacent-line prefetcher
// may or may not move together:
//
//	[0, 4)    the slot's word, written last: the message's number (1 for
//	          the first) in the high 16 bits, the frame's length in bytes
//	          in the low 16
//	[4, 8)    position: the producer's ring head when it posted, low 32 bits
//	[8, 128)  the frame
//
// A frame of a 48-byte header and 8 payload bytes thus fits in the first
// line with the word that announces it: the consumer's poll of the word
// has fetched the frame. With a 16-byte word and position ahead of the
// frame (ring version 3) its payload started in the second line, and an
// 8-byte AllReduce's profile had a tenth of its samples in the copy of
// that payload, the line's transfer. Sixteen bits of message number are
// enough: a slot holds either the message the consumer expects or the one
// a lap (16 messages) before it.
//
// Frames go in order whichever way they travel: a box frame is next when its
// position equals the consumer's ring tail, that is when every ring byte
// committed before it has been read and none committed after it has (ring
// frames are never interleaved with anything: the one producer finishes a
// frame before it starts the next). The low 32 bits suffice because the
// consumer's tail and a pending box's position are less than a ring apart,
// and a ring is at most 1 GiB.
//
// The producer numbers its messages and reuses a slot only after the
// consumer's taken counter shows the slot's previous message taken; it
// reads that counter only when its cached copy says every slot is in use,
// once per lap at most. The producer never waits for a box: with none free,
// the frame goes through the ring.
const (
	offFastTaken = 896  // uint64: box messages the consumer has taken; written by the consumer only
	offFastBoxes = 1024 // fastSlots slots of fastSlotBytes each, up to 3072

	fastSlots     = 16
	fastSlotBytes = 128
	fastFrameOff  = 8

	// FastFrameMax is the largest frame a fast box holds.
	FastFrameMax = fastSlotBytes - fastFrameOff
)

// fastBoxes is a ring's view of its boxes and the two sides' counters.
type fastBoxes struct {
	slots []byte         // fastSlots * fastSlotBytes, in the ring header
	taken *atomic.Uint64 // the consumer's count of messages taken
}

func attachFastBoxes(hdr []byte) fastBoxes {
	return fastBoxes{
		slots: hdr[offFastBoxes : offFastBoxes+fastSlots*fastSlotBytes],
		taken: word64(hdr, offFastTaken),
	}
}

// clear empties every box, for NewRing.
func (f fastBoxes) clear() {
	f.taken.Store(0)
	for i := range fastSlots {
		clear(f.slot(uint64(i)))
	}
}

// slot returns the slot of message number m+1 (m messages before it).
func (f fastBoxes) slot(m uint64) []byte {
	off := int(m%fastSlots) * fastSlotBytes
	return f.slots[off : off+fastSlotBytes : off+fastSlotBytes]
}

// slotWord is the slot's announcement: message number and frame length.
func slotWord(s []byte) *atomic.Uint32 { return word32(s, 0) }

// slotNumber is the slot word's message number of message m+1 (m
// messages before it).
func slotNumber(m uint64) uint32 { return uint32(uint16(m+1)) << 16 }

// FastSlot returns space for an n-byte frame in the next free fast box, to
// be published with CommitFast, or nil when n exceeds FastFrameMax, every
// box holds a message the consumer has not taken yet, or the ring is
// closed (the ring's calls then say why). Only the producer may call it;
// calling it again without CommitFast returns the same space.
func (r *Ring) FastSlot(n int) []byte {
	if n > FastFrameMax || n < 0 || r.closed.Load() != 0 || r.local.Load() || !r.fastFree() {
		return nil
	}
	s := r.fast.slot(r.wFast)
	return s[fastFrameOff : fastFrameOff+n : fastFrameOff+n]
}

// fastFree reports whether a box is free, reading the consumer's counter
// only when the cached one says none is.
func (r *Ring) fastFree() bool {
	if r.wFast-r.wFastTaken < fastSlots {
		return true
	}
	r.wFastTaken = r.fast.taken.Load()
	return r.wFast-r.wFastTaken < fastSlots
}

// CommitFast publishes the n-byte frame written into the space FastSlot
// returned, and wakes the consumer if it sleeps.
func (r *Ring) CommitFast(n int) {
	if n > FastFrameMax || n < 0 || r.wFast-r.wFastTaken >= fastSlots {
		panic("shm: fast commit without a fast slot")
	}
	s := r.fast.slot(r.wFast)
	binary.LittleEndian.PutUint32(s[4:], uint32(r.wHead))
	// The frame and the position are plain stores; the word is stored
	// after them, atomically, so a consumer that loads it sees them.
	slotWord(s).Store(slotNumber(r.wFast) | uint32(n))
	r.wFast++
	// Any message wakes a sleeping consumer: it may be waiting for a
	// frame of either kind, and never for more of a ring frame (the one
	// producer finished that before posting this).
	wake(r.consWaiting, r.dataEv)
}

// NextFrame tells the consumer where the next frame is, without waiting:
// in a fast box (fast is the frame, valid until ReleaseFast), in the ring
// (inRing: some of it is readable now), or nowhere yet (both zero).
func (r *Ring) NextFrame() (fast []byte, inRing bool) {
	// head first: a box posted before the ring bytes seen here is then
	// visible below too (the producer stored its sequence before
	// committing them), so the check cannot pass over it.
	r.rHead = r.head.Load()
	if f := r.fastNext(); f != nil {
		return f, false
	}
	return nil, r.rHead != r.rTail
}

// fastNext returns the frame in the next box if it is the next frame of
// the stream.
func (r *Ring) fastNext() []byte {
	s := r.fast.slot(r.rFast)
	w := slotWord(s).Load()
	if w&^0xffff != slotNumber(r.rFast) || binary.LittleEndian.Uint32(s[4:]) != uint32(r.rTail) {
		return nil
	}
	n := w & 0xffff
	if n > FastFrameMax {
		n = FastFrameMax // only a corrupted slot; the frame's decoding fails
	}
	return s[fastFrameOff : fastFrameOff+n : fastFrameOff+n]
}

// fastPosted reports whether the next box holds a message, whatever its
// position: a reason to look again.
func (r *Ring) fastPosted() bool {
	return slotWord(r.fast.slot(r.rFast)).Load()&^0xffff == slotNumber(r.rFast)
}

// ReleaseFast gives the box of the frame NextFrame returned back to the
// producer; only after NextFrame returned a box may it be called. The
// frame's bytes must not be used after it.
func (r *Ring) ReleaseFast() {
	r.rFast++
	// A release store: the producer only reads the counter (fastFree),
	// never waits on it, and must only see it after this side's reads of
	// the box, which x86's order gives a plain store.
	cpu.ReleaseStore64(r.fast.taken, r.rFast)
}

// AwaitFrame waits until NextFrame may find a frame: the ring holds unread
// bytes or a box a message, or the ring was closed. It returns ctx's error
// when ctx ends, and the ring's (ErrClosed, ErrPeerClosed, ErrPeerGone)
// once it is closed and nothing is left to read.
func (r *Ring) AwaitFrame(ctx context.Context) error {
	ready := func() bool { return r.head.Load() != r.rTail || r.fastPosted() }
	for !ready() {
		if r.local.Load() {
			return ErrClosed
		}
		if r.closed.Load() != 0 {
			// The producer posts before it closes: look once more
			// after seeing the flag, so that nothing is lost.
			if ready() {
				return nil
			}
			return r.closedErr()
		}
		s := sleeper{ev: r.dataEv, waiting: r.consWaiting, wantWord: r.consWant, counter: r.head, want: r.rTail + 1, also: r.fastPosted}
		if err := r.wait(ctx, &s, ready); err != nil {
			return err
		}
	}
	return nil
}

package shm

// A ring stays at the front of its data area while it can.
//
// The first touch of a page of shared memory costs each process that
// touches it a trap to the hypervisor on the project's machines (about
// 6 us a page, prefault.go), and a ring of 4 MiB is 1024 pages a side. A
// ring that ran its counters round the whole data area would find cold
// pages in every call until it had gone round once: a fresh job's first
// four AllReduces of 1 MiB at np 2 took 5-7 ms each against 0.1 ms after
// (docs/performance.md, "Warm from the first call"). So a producer about
// to write into a part of the data area it has never written skips the
// rest of the lap and starts again at the front, when the front has room
// (the bytes the consumer has not taken yet sit between the front and the
// producer, without wrapping) and nothing else stands in the way: the
// pages a ring uses are those its largest backlog needs, from the front,
// which the link reads ahead at set-up, and they stay warm in the cache.
//
// The skip is in the stream's positions, so the counters keep their
// meaning: the producer publishes where it skipped from and to
// (offSkipFrom, offSkipTo), then moves head past the gap (ToFront, which
// the link calls at the start of each frame). The consumer
// reads up to the skip's start, then jumps over the gap (takeSkip) and
// releases it like data read; the producer counts the gap free as soon as
// the consumer has read up to it (freeAfter). The producer makes no skip while the last
// one is not taken, so the pair a consumer reads is the one ahead of it,
// or a stale one wholly behind it; and none while a fast box is pending,
// since a box is ordered by its stream position, which a skip would jump
// over.

// frontStep is the granularity of the producer's record of the data area
// it has written (Front): 64 KiB, or a quarter of a smaller ring.
func (r *Ring) frontStep() uint64 { return min(64<<10, r.cap/4) }

// ToFront is the producer's call before it writes a message of n bytes
// into the ring (Reserve, Write): when the message would reach a part of
// the data area this producer has never written, and the front has room
// for all of it now, the ring skips the rest of the lap and the message
// starts at the front. Room that HasRoom reported stays: the skip leaves
// at least n bytes free. Only the producer may call it.
func (r *Ring) ToFront(n int) {
	off := r.wHead & r.mask
	if off == 0 || off+uint64(n) <= r.wFront || uint64(n) > r.cap {
		return
	}
	r.wTail = r.tail.Load()
	r.wFastTaken = r.fast.taken.Load()
	backlog := r.wHead - r.wTail
	if r.wTail < r.wSkipTo || r.wFast != r.wFastTaken || backlog > off || off-backlog < uint64(n) {
		return
	}
	gap := r.cap - off
	r.skipFrom.Store(r.wHead)
	r.skipTo.Store(r.wHead + gap)
	r.wSkipFrom = r.wHead
	r.wHead += gap
	r.wSkipTo = r.wHead
	r.head.Store(r.wHead) // after the pair: a consumer that sees head sees them
}

// freeAfter returns the bytes the producer may write while the consumer's
// counter reads tail: the gap of a skip counts as free from the moment the
// consumer has read up to it, before it jumps it (it never reads the gap),
// so that a skip made while the ring was empty costs no room at all.
func (r *Ring) freeAfter(tail uint64) uint64 {
	if tail >= r.wSkipFrom && tail < r.wSkipTo {
		tail = r.wSkipTo
	}
	return r.cap - (r.wHead - tail)
}

// spaceWant returns the consumer counter a producer waiting for room
// wakes at: want, or sooner the start of a skip not reached yet, where
// the gap frees (freeAfter).
func (r *Ring) spaceWant(want uint64) uint64 {
	if r.wTail < r.wSkipFrom && r.wSkipFrom < want {
		return r.wSkipFrom
	}
	return want
}

// wrote records that the producer reserved [off, off+n) of the data area.
func (r *Ring) wrote(off, n uint64) {
	step := r.frontStep()
	if end := min(r.cap, (off+n+step-1)/step*step); end > r.wFront {
		r.wFront = end
	}
}

// takeSkip is the consumer's look at head: it returns how far it may read,
// head or the start of a skip ahead of it, having first jumped over a skip
// that starts where it stands.
func (r *Ring) takeSkip() uint64 {
	h := r.head.Load()
	if h == r.rTail {
		return h
	}
	from := r.skipFrom.Load()
	switch {
	case from < r.rTail || from > h:
		return h // stale: a skip already taken
	case from > r.rTail:
		return from // data first, then the skip
	}
	to := r.skipTo.Load()
	r.rTail = to
	r.tail.Store(to)
	if r.prodWaiting.Load() != 0 && to >= r.prodWant.Load() {
		wake(r.prodWaiting, r.spaceEv)
	}
	return h
}

// Front returns how much of the data area, from its start, the producer
// has written so far (a multiple of 64 KiB or of a quarter of a smaller
// ring, at most Cap). Only the
// producer may call it.
func (r *Ring) Front() int { return int(r.wFront) }

package transport

import (
	"context"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// Link is an ordered, reliable, bidirectional frame channel to one peer.
// Frames are a wire.Header followed by h.Len payload bytes.
//
// Concurrency: one goroutine may send while another receives; two
// concurrent Sends, or two concurrent receives, are not allowed.
// Cancelling ctx unblocks a pending call, which then fails; the link is
// unusable afterwards (a partial frame may have been transferred).
type Link interface {
	// Send transmits h and then p; h.Len must equal len(p). It returns when
	// p may be reused.
	Send(ctx context.Context, h *wire.Header, p []byte) error

	// RecvHeader reads the header of the next frame into h.
	RecvHeader(ctx context.Context, h *wire.Header) error

	// RecvPayload reads the payload of the frame whose header was read last
	// into p, whose length must equal that header's Len.
	RecvPayload(ctx context.Context, p []byte) error

	// Shut makes this end's pending and later calls fail, and the peer's
	// once it has read what was sent before. It may be called while calls
	// run, from any goroutine, more than once: it is how a failed job
	// unblocks ranks waiting on peers that will never send.
	Shut()

	// Close shuts the link and releases it. No call may be running on the
	// link (Shut first, to make pending ones return): a transport may free
	// memory that calls use, as shared memory unmaps its segment. Close is
	// idempotent.
	Close() error
}

// PayloadVisitor is implemented by links that can show a payload in place,
// in the link's own buffer, so that a receiver can reduce straight from it
// instead of copying it out first (shared memory does this).
type PayloadVisitor interface {
	// VisitPayload calls fn on successive pieces of the payload of the frame
	// whose header was read last, in order; off is the piece's offset within
	// the payload. b is valid only during the call. The pieces add up to n
	// bytes, which must equal the header's Len.
	VisitPayload(ctx context.Context, n int, fn func(off int, b []byte)) error
}

// TrySender is implemented by links that can tell, without waiting, that a
// frame fits in their buffer (shared memory does). The executor sends such
// frames inline, sparing a small step the hand-over of its send to another
// goroutine, which costs a scheduler wake-up.
type TrySender interface {
	// TrySend sends the frame h, p if it can do so without waiting and
	// reports whether it did. An error leaves the link unusable, as one of
	// Send does.
	TrySend(ctx context.Context, h *wire.Header, p []byte) (sent bool, err error)
}

// Poster is implemented by links that can hand a large payload over in
// place: the frame carries a reference to the sender's memory and the
// receiver copies the payload straight from there, one copy instead of two
// (shared memory does this where the kernel allows one process to read
// another's memory). A post does not wait for the receiver, so a rank can
// post its sends of a step and go on to its receives on the same goroutine.
type Poster interface {
	// TryPost sends the frame h whose payload p stays in place, if the
	// link hands p over that way and can do so now without waiting, and
	// reports whether it did. A posted p must stay unchanged until a
	// later WaitPosted returns. thenWaits says that the caller has
	// nothing to do after its posts but WaitPosted (a Broadcast's root),
	// so that the receiver may ask it to copy part of p itself. An error
	// leaves the link unusable.
	TryPost(ctx context.Context, h *wire.Header, p []byte, thenWaits bool) (posted bool, err error)

	PostWaiter
}

// PostWaiter waits for the sends a link took without waiting (Poster,
// AsyncSender) to be done with the caller's memory.
type PostWaiter interface {
	// WaitPosted waits until every payload posted or started so far is
	// out of the caller's memory: read by the receiver (Poster) or
	// written to the link (AsyncSender).
	WaitPosted(ctx context.Context) error
}

// AsyncSender is implemented by links that can start a send and finish
// it later (TCP: the socket takes what its buffer holds at once, and the
// rest is written while the rank waits for its receives, on any of its
// links). The executor starts a step's sends this way and runs the
// receive on its calling goroutine, where a send handed to a worker
// goroutine costs a wake-up through the scheduler for every frame that
// finds the socket full.
type AsyncSender interface {
	// StartSend sends h and p, which the link may cut into frames of its
	// own size (each with h's fields, its own Offset and Len), as far as
	// it can without waiting, and leaves the rest to be written later.
	// p must stay unchanged until a later WaitPosted returns. An error,
	// here or from WaitPosted, leaves the link unusable.
	StartSend(ctx context.Context, h *wire.Header, p []byte) error

	// Background makes the link write what is left of its started send
	// on its own, for a caller about to wait on something that does not
	// progress it: a receive over another transport.
	Background()

	PostWaiter
}

// Arriver is implemented by links that can tell, without waiting, that
// their next frame has arrived whole (shared memory can). The executor
// runs such receives on its calling goroutine, polling the small receives
// of a step with several peers there instead of giving each a goroutine
// that waits: on an oversubscribed host every extra runnable goroutine is
// a trip through the scheduler.
type Arriver interface {
	// Arrived reports whether reading the next frame, header and
	// payload, will not wait, and the payload length its header gives
	// (-1 when the read will fail instead, or the link is between a
	// header and its payload).
	Arrived() (payload int, ok bool)
}

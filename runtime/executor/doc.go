// Package executor runs one rank's plan of a collective over links to its
// peers.
//
// A plan (package plan) is an ordered list of steps; the executor runs the
// ops of one step concurrently and starts a step when the previous one has
// finished. Every transfer is cut into segments of at most SegmentBytes, one
// frame each, so that a receiver reduces segment k while segment k+1 is still
// on the wire, and so that no link needs to buffer a whole transfer; a link
// that cuts a transfer into frames of its own size (TCP) is taken as it
// comes.
//
// The calling goroutine runs what needs no waiting first: the sends a
// link takes at once, either started and left to the link to finish
// (transport.AsyncSender: TCP writes the rest while the rank waits for
// its receives over TCP, or on a goroutine of the link when the step
// also waits on shared memory), handed over in place (transport.Poster: shared memory
// can let the peer copy transfers straight out of this rank's buffer,
// where the runtime turns that on) or small enough
// for the link's buffer (transport.TrySender), then the step's local
// copies and reductions. Of several ops left, it takes the receives that
// have arrived whole as they come, polling small ones for a while
// (arrived.go, transport.Arriver); then it runs one of what remains, and
// the others run on workers, one goroutine each, kept between calls. A
// step of one send and one receive thus runs on one goroutine, which
// matters on machines with few cores: every extra thread that must run is
// a hand-off through the scheduler. A step ends when its ops are done and
// its links are done with what it posted or started (waitPosted), so the
// next step may overwrite those buffers.
//
// A plan that is one small exchange with one peer and local work (every
// collective of a few bytes at np 2) skips that machinery: its first step
// runs straight on the calling goroutine (pair.go), where the general
// step's own work cost as much as the exchange.
//
// Every frame carries the call's sequence number and descriptor, the sender,
// the transfer's ordinal on its directed link and the segment's offset and
// length. A receiver compares each header with what its own plan expects and
// fails with a *MismatchError instead of mixing up two calls.
//
// The executor does no allocation in steady state beyond what Go's
// goroutines need: staging and scratch buffers are kept between calls and
// pre-faulted when they grow.
package executor

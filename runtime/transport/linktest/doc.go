// Package linktest is a conformance suite for transport.Link
// implementations, in the spirit of golang.org/x/net/nettest: any
// transport (shared memory, TCP, ...) runs the same tests through
// Run(t, newPair), so that the executor can rely on one contract.
//
// What the suite holds a link to: frames arrive in order with every
// header field exactly as sent; zero-length and very large payloads (far
// bigger than any ring or socket buffer) work; both directions run at once
// without either Send waiting for the other side to start receiving; Close
// (local or the peer's) releases a blocked call promptly with an error;
// cancelling or timing out the context of a blocked Send or Recv returns an
// error that wraps ctx.Err(); misuse (a header whose Len does not match the
// payload, a payload of the wrong size) is an error, not a hang or a
// panic; and VisitPayload, where implemented, shows the payload in order
// in pieces that add up to it, every piece but the last a whole number of
// 8-byte words (so that a reduction over the pieces never meets half an
// element).
//
// The fast paths the executor takes are held to their contracts where a
// link offers them (fast.go), and skipped where it does not:
//
//   - TrySend (transport.TrySender) never waits, takes frames while they
//     fit and then refuses them, sending nothing of a frame it refused;
//   - TryPost and WaitPosted (transport.Poster): a posted payload arrives
//     intact however it is read, and WaitPosted does not return before
//     the receiver has read it (the suite overwrites the memory as soon
//     as it returns);
//   - StartSend, Background and WaitPosted (transport.AsyncSender): a
//     started send arrives as frames of the transfer's header with their
//     own offsets, a Send after it comes after it, WaitPosted returns only
//     once it is written, and one left to the background arrives while
//     its sender does nothing more;
//   - Arrived (transport.Arriver) reports a frame only once it is there
//     whole, never one still being sent, without consuming it, so that
//     its read does not wait; and -1 between a header and its payload,
//     and after Shut.
package linktest

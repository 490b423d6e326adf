// Package transport defines what the executor moves frames over and how
// the runtime opens it: the Link between two ranks with its optional fast
// paths, and the Transport that makes links of one medium.
//
// # Links
//
// A Link is an ordered, reliable, bidirectional frame channel to one peer.
// Links may offer fast paths, which the executor type-asserts:
//
//   - PayloadVisitor: show a payload in place, so that a receiver reduces
//     straight from the link's buffer;
//   - TrySender: send a frame only if that needs no waiting, inline;
//   - Poster: hand a large payload over in place, the receiver copying it
//     out of the sender's memory (WaitPosted until it has);
//   - AsyncSender: start a send and finish it while the rank waits for its
//     receives (WaitPosted until it is written);
//   - Arriver: tell without waiting that the next frame is there whole.
//
// # Transports
//
// A Transport (Name, CanConnect, Listen, Dial) makes the links of one
// medium, with the rank's configuration for them (how they wait, their
// buffers and sockets: every communicator has its own). The runtime's link
// manager (runtime/links.go) walks an ordered table of transports, as NCCL
// does:
//
//	shm  shmlink.Transport  ranks whose topology facts say they share a host
//	tcp  tcplink.Transport  any two ranks
//
// (tcp alone under HCCL_SHM_DISABLE). A rank listens on every transport of
// its table and publishes each listener's endpoint, by transport name,
// with its topology facts; a transport it cannot listen on but can do
// without (Unavailable: another process took its shared-memory socket's
// name) is left out, and its peers pass it over. Of two ranks the higher
// one dials and the lower one accepts, so both agree on one link without
// talking first: the dialer takes the first transport of the table whose
// CanConnect accepts the two ranks' facts and on which the peer listens,
// and falls back to the next when the dial fails (a full /dev/shm, say),
// with a warning the first time.
//
// Implementations live in sub-packages, one per medium: shmlink (two
// shared-memory rings, for ranks of one host) and tcplink (one
// authenticated TCP connection). linktest is the conformance suite every
// link passes, fast paths included.
package transport

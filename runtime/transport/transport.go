package transport

import (
	"context"

	"github.com/hcclrun/hcclrun/runtime/topo"
)

// Transport is one medium a rank's links go over: shared memory, TCP. The
// link manager holds an ordered table of them, as NCCL does: it listens on
// every transport, publishes each listener's endpoint under the
// transport's name, and links to a peer over the first transport of the
// table that can connect the two ranks and to which the peer published an
// endpoint, falling back to the next one when a dial fails.
//
// A Transport carries the rank's configuration for its links (how they
// wait, their buffers, their sockets), so that two communicators of one
// process each have their own.
type Transport interface {
	// Name names the transport in the published endpoints and in the
	// logs ("shm", "tcp").
	Name() string

	// CanConnect reports whether the ranks of topology facts self and
	// peer can be linked over this transport (shared memory: the same
	// host).
	CanConnect(self, peer topo.Facts) bool

	// Listen starts accepting links from the higher ranks. An error that
	// wraps an *Unavailable leaves the rank without this transport,
	// which its peers then pass over; any other fails the rank.
	Listen() (Listener, error)

	// Dial opens a link to the lower rank peer, whose listener published
	// addr, and fails when the link cannot be made or ctx ends; the link
	// manager then tries the next transport, unless ctx ended. The tag
	// reaches the peer's Accept with the link: one listener serves every
	// link set of a rank (its communicators and their channels), and the
	// tag says which one the link belongs to.
	Dial(ctx context.Context, peer int, tag uint32, addr string) (Link, error)
}

// Listener accepts a transport's links from higher ranks. Close may be
// called concurrently with Accept, which it ends.
type Listener interface {
	// Addr is the endpoint the rank publishes for the transport: what
	// its peers' Dial get as addr.
	Addr() string

	// Accept waits for the next link and returns it with the peer's
	// rank, as the peer proved it, and the tag the peer dialled with; it
	// fails once the listener is closed.
	// Connections that are not links of the rank's job are dropped (and
	// logged) here, never returned.
	Accept() (l Link, peer int, tag uint32, err error)

	// Close stops listening. Links already accepted stay open.
	Close() error
}

// Unavailable is a Listen error after which the rank goes on without the
// transport (its peers reach it by the next transports of the table), as
// when another process took the name of the rank's shared-memory socket.
// The link manager logs Reason at WARN, with Err.
type Unavailable struct {
	Reason string
	Err    error
}

func (u *Unavailable) Error() string {
	if u.Err == nil {
		return u.Reason
	}
	return u.Reason + ": " + u.Err.Error()
}

func (u *Unavailable) Unwrap() error { return u.Err }

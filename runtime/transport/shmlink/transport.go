package shmlink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// Transport is a rank's shared-memory transport, an entry of the link
// manager's table (transport.Transport): it links the ranks whose topology
// facts say they share a host, with the links' settings the rank chose.
type Transport struct {
	dial   DialConfig
	listen ListenConfig
	host   Host
	log    *slog.Logger
}

var _ transport.Transport = (*Transport)(nil)

// NewTransport returns the transport of rank dial.Self of job dial.JobID
// (with the job key dial.Key): it dials with dial (Peer and Addr set per
// link) and listens with listen, on a host as host says (for the space it
// checks before it listens). log receives the listener's warnings and a
// DEBUG line per link dialled; nil discards them.
func NewTransport(dial DialConfig, listen ListenConfig, host Host, log *slog.Logger) *Transport {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Transport{dial: dial, listen: listen, host: host, log: log}
}

// Name is "shm".
func (t *Transport) Name() string { return "shm" }

// CanConnect reports whether self and peer share a host: memory they can
// both map and each other's abstract unix sockets (topo.SameHost).
func (t *Transport) CanConnect(self, peer topo.Facts) bool { return topo.SameHost(self, peer) }

// Listen checks that /dev/shm holds the links a collective opens first
// (Host.CheckSpace), then listens (ListenConfig.Listen). A socket name
// taken by another process leaves the rank without the transport
// (transport.Unavailable): only a process that knew the tag can have
// taken it, and it must not stop the job, which reaches this rank over
// the next transport.
func (t *Transport) Listen() (transport.Listener, error) {
	if err := t.host.CheckSpace(t.dial.RingBytes); err != nil {
		return nil, err
	}
	ln, err := t.listen.Listen(t.dial.JobID, t.dial.Self, t.dial.Key, t.log)
	switch {
	case errors.Is(err, ErrNameTaken):
		return nil, &transport.Unavailable{Reason: "the shared-memory socket name is taken by another process; the ranks of this host reach this rank over TCP", Err: err}
	case err != nil:
		return nil, fmt.Errorf("listen for shared-memory links: %w", err)
	}
	return acceptor{ln}, nil
}

// Dial dials the listener of peer at addr (Dial).
func (t *Transport) Dial(ctx context.Context, peer int, tag uint32, addr string) (transport.Link, error) {
	cfg := t.dial
	cfg.Peer, cfg.Tag, cfg.Addr = peer, tag, addr
	l, err := Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t.log.Debug("link dialled", "peer", peer, "via", t.Name(), "reads_in_place", l.ReadsDirect())
	return l, nil
}

// acceptor is a Listener as a transport.Listener.
type acceptor struct{ *Listener }

func (a acceptor) Accept() (transport.Link, int, uint32, error) {
	l, peer, err := a.Listener.Accept(context.Background())
	if err != nil {
		return nil, 0, 0, err
	}
	return l, peer, l.Tag(), nil
}

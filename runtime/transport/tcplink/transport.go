package tcplink

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// Transport is a rank's TCP transport, an entry of the link manager's
// table (transport.Transport): it links any two ranks over the
// authenticated data connections of netio, with the links' settings the
// rank chose (Config).
type Transport struct {
	ip   string
	rank int
	key  []byte
	cfg  Config
	log  *slog.Logger
}

var _ transport.Transport = (*Transport)(nil)

// NewTransport returns the transport of rank, which listens on ip and
// authenticates with the job key. Its links are made as cfg says, all of
// one group (a new one where cfg has none), and their connections tuned
// with cfg.Socket. log receives the listener's warnings and a DEBUG line
// per link dialled; nil discards them.
func NewTransport(ip string, rank int, key []byte, cfg Config, log *slog.Logger) *Transport {
	if cfg.Group == nil {
		cfg.Group = new(Group)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Transport{ip: ip, rank: rank, key: key, cfg: cfg, log: log}
}

// Name is "tcp".
func (t *Transport) Name() string { return "tcp" }

// CanConnect is true: TCP links any two ranks.
func (t *Transport) CanConnect(self, peer topo.Facts) bool { return true }

func (t *Transport) hello(tag uint32) wire.Hello {
	return wire.Hello{Purpose: wire.PurposeData, Rank: uint32(t.rank), Tag: tag}
}

// Listen listens on a port of its own of the transport's address.
func (t *Transport) Listen() (transport.Listener, error) {
	ln, err := netio.Listen(net.JoinHostPort(t.ip, "0"), t.key, t.hello(0), t.log)
	if err != nil {
		return nil, fmt.Errorf("listen for data links on %s: %w", t.ip, err)
	}
	return &listener{ln: ln, t: t}, nil
}

// Dial connects to the listener of peer at addr, retrying while it
// refuses (netio.Dial), and checks that peer answered. The tag goes in
// the handshake's Hello, where the peer's Accept reads it.
func (t *Transport) Dial(ctx context.Context, peer int, tag uint32, addr string) (transport.Link, error) {
	conn, hello, err := netio.Dial(ctx, addr, t.key, t.hello(tag))
	if err != nil {
		return nil, fmt.Errorf("connect to rank %d at %s: %w", peer, addr, err)
	}
	if hello.Purpose != wire.PurposeData || int(hello.Rank) != peer {
		conn.Close()
		return nil, fmt.Errorf("connect to rank %d at %s: answered by %s", peer, addr, hello)
	}
	t.tune(conn, peer)
	t.log.Debug("link dialled", "peer", peer, "via", t.Name(), "addr", addr)
	return t.cfg.New(conn, peer), nil
}

// listener is the transport's netio.Listener.
type listener struct {
	ln *netio.Listener
	t  *Transport
}

func (l *listener) Addr() string { return l.ln.Addr().String() }

func (l *listener) Close() error { return l.ln.Close() }

// Accept returns the next data link, dropping (with a warning) the
// authenticated connections that are not one: the launcher's, or another
// purpose's.
func (l *listener) Accept() (transport.Link, int, uint32, error) {
	for {
		conn, hello, err := l.ln.Accept()
		if err != nil {
			return nil, 0, 0, err
		}
		if hello.Purpose != wire.PurposeData || hello.Rank == wire.LauncherRank {
			l.t.log.Warn("dropping a connection that is not a data link", "hello", hello.String(), "remote", conn.RemoteAddr().String())
			conn.Close()
			continue
		}
		peer := int(hello.Rank)
		l.t.tune(conn, peer)
		return l.t.cfg.New(conn, peer), peer, hello.Tag, nil
	}
}

package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"

	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/tcplink"
)

// linkManager opens the data links of a rank lazily, the first time the
// executor needs a peer. Of two ranks, the higher one dials and the lower
// one accepts, so both sides agree on one connection without talking first.
// Endpoints are published on the control plane under dataKey(rank).
type linkManager struct {
	rank, size int
	key        []byte
	ctl        controlPlane
	ln         *netio.Listener
	log        *slog.Logger

	mu      sync.Mutex
	links   map[int]transport.Link
	arrived map[int]chan struct{} // closed when a link from that (higher) peer is accepted
	closed  bool
	done    chan struct{} // closed by close
}

func dataKey(rank int) string { return "data/" + strconv.Itoa(rank) }

// newLinkManager listens for data links on ip and publishes the endpoint.
func newLinkManager(ctx context.Context, rank, size int, key []byte, ip string, ctl controlPlane, log *slog.Logger) (*linkManager, error) {
	me := netio.Hello{Purpose: netio.PurposeData, Rank: uint32(rank)}
	ln, err := netio.Listen(net.JoinHostPort(ip, "0"), key, me, log)
	if err != nil {
		return nil, fmt.Errorf("listen for data links on %s: %w", ip, err)
	}
	m := &linkManager{
		rank: rank, size: size, key: key, ctl: ctl, ln: ln, log: log,
		links:   make(map[int]transport.Link),
		arrived: make(map[int]chan struct{}),
		done:    make(chan struct{}),
	}
	if err := ctl.Put(ctx, dataKey(rank), []byte(ln.Addr().String())); err != nil {
		ln.Close()
		return nil, fmt.Errorf("publish data endpoint: %w", err)
	}
	go m.acceptLoop()
	return m, nil
}

func (m *linkManager) arrival(peer int) chan struct{} {
	ch, ok := m.arrived[peer]
	if !ok {
		ch = make(chan struct{})
		m.arrived[peer] = ch
	}
	return ch
}

func (m *linkManager) acceptLoop() {
	for {
		conn, hello, err := m.ln.Accept()
		if err != nil {
			return // closed
		}
		peer := int(hello.Rank)
		if hello.Purpose != netio.PurposeData || hello.Rank == netio.LauncherRank || peer <= m.rank || peer >= m.size {
			m.log.Warn("dropping unexpected data connection", "rank", m.rank, "hello", hello.String(), "remote", conn.RemoteAddr().String())
			conn.Close()
			continue
		}
		m.mu.Lock()
		if m.closed || m.links[peer] != nil {
			m.mu.Unlock()
			m.log.Warn("dropping duplicate data connection", "rank", m.rank, "peer", peer)
			conn.Close()
			continue
		}
		m.links[peer] = tcplink.New(conn, peer)
		close(m.arrival(peer))
		m.mu.Unlock()
	}
}

// Link returns the link to peer, opening it if needed. Safe for concurrent
// use.
func (m *linkManager) Link(ctx context.Context, peer int) (transport.Link, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if l := m.links[peer]; l != nil {
		m.mu.Unlock()
		return l, nil
	}
	if peer > m.rank {
		ch := m.arrival(peer)
		m.mu.Unlock()
		select {
		case <-ch:
		case <-m.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for rank %d to connect: %w", peer, ctx.Err())
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed {
			return nil, ErrClosed
		}
		return m.links[peer], nil
	}
	m.mu.Unlock()
	l, err := m.dial(ctx, peer)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		l.Close()
		return nil, ErrClosed
	}
	if old := m.links[peer]; old != nil {
		// Two ops of one step asked for the same lower peer at once; keep
		// the first link.
		l.Close()
		return old, nil
	}
	m.links[peer] = l
	return l, nil
}

func (m *linkManager) dial(ctx context.Context, peer int) (transport.Link, error) {
	addr, err := m.ctl.Get(ctx, dataKey(peer))
	if err != nil {
		return nil, fmt.Errorf("look up the data endpoint of rank %d: %w", peer, err)
	}
	me := netio.Hello{Purpose: netio.PurposeData, Rank: uint32(m.rank)}
	conn, hello, err := netio.Dial(ctx, string(addr), m.key, me)
	if err != nil {
		return nil, fmt.Errorf("connect to rank %d at %s: %w", peer, addr, err)
	}
	if hello.Purpose != netio.PurposeData || int(hello.Rank) != peer {
		conn.Close()
		return nil, fmt.Errorf("connect to rank %d at %s: answered by %s", peer, addr, hello)
	}
	return tcplink.New(conn, peer), nil
}

// close closes the listener and every link; blocked calls on them fail.
func (m *linkManager) close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.done)
	links := m.links
	m.links = nil
	m.mu.Unlock()
	errs := []error{m.ln.Close()}
	for _, l := range links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// linkManager opens the data links of a rank lazily, the first time the
// executor needs a peer. Of two ranks, the higher one dials and the lower
// one accepts, so both sides agree on one connection without talking first.
//
// It walks a table of transports, as NCCL does (transports.go builds it):
// {shm, tcp}, or {tcp} alone when shared memory is off. The rank listens
// on every transport of its table and publishes the listeners' endpoints
// with its topology facts on the control plane (factsKey); to link to a
// lower rank it takes the first transport whose CanConnect accepts the
// two ranks' facts and to which the peer published an endpoint, and falls
// back to the next when a dial fails. The endpoint of a rank's
// shared-memory socket is a random name, so that another local user cannot
// take it first, and only the job's ranks learn it.
type linkManager struct {
	rank, size int
	ctl        controlPlane
	// table is the transports in order of preference; listeners are
	// their listeners, by the same index, nil where a transport is
	// unavailable at this rank (transport.Unavailable: its peers then
	// pass it over).
	table     []transport.Transport
	listeners []transport.Listener
	// fallbacks counts the links that went over a later transport of the
	// table because a dial over an earlier one failed.
	fallbacks atomic.Int32
	ringBytes int           // of the shm links: the capacity of each ring (transports.go)
	lazyRings bool          // the shm links' pages fault in at first touch (shmlink.Host.LazyRings)
	poll      executor.Poll // how the executor waits for several small receives, from the wait policy
	facts     topo.Facts    // this rank's
	log       *slog.Logger

	mu    sync.Mutex
	links map[int]transport.Link
	// open is links indexed by peer, for the executor's two lookups per
	// op without the lock (whose lock and unlock were 7% of an 8-byte
	// AllReduce's profile): set under mu as links open, ignored once the
	// manager stops.
	open       []atomic.Pointer[openLink]
	stopped    atomic.Bool
	arrived    map[int]chan struct{} // closed when a link from that (higher) peer is accepted
	dialing    map[int]*pendingDial
	peerFacts  map[int]published
	closed     bool
	done       chan struct{} // closed by close
	acceptDone sync.WaitGroup
}

func factsKey(rank int) string { return "topo/" + strconv.Itoa(rank) }

// published is what a rank puts under factsKey: its topology facts and
// the endpoint of each of its listeners by transport name. A transport
// missing there (shared memory off, or its socket name taken) tells the
// rank's peers to pass it over at once.
type published struct {
	topo.Facts
	Endpoints map[string]string `json:"endpoints,omitempty"`
}

// newLinkManager listens for data links on every transport of the rank's
// table (transports.go; TCP on ip), and publishes the endpoints with the
// rank's facts. serverCPUs is how many CPUs the ranks of this server are
// bound to together, 0 when they are not bound (tableFacts).
func newLinkManager(ctx context.Context, job Job, knobs tunables, ip string, facts topo.Facts, serverCPUs int, ctl controlPlane, log *slog.Logger) (*linkManager, error) {
	ts, err := transportsFor(job, knobs, ip, facts, serverCPUs, log)
	if err != nil {
		return nil, err
	}
	m := &linkManager{
		rank: job.Rank, size: job.Size, ctl: ctl, log: log, facts: facts,
		table: ts.table, listeners: make([]transport.Listener, len(ts.table)),
		ringBytes: ts.ringBytes, lazyRings: ts.lazyRings, poll: ts.poll,
		links:     make(map[int]transport.Link),
		open:      make([]atomic.Pointer[openLink], job.Size),
		arrived:   make(map[int]chan struct{}),
		dialing:   make(map[int]*pendingDial),
		peerFacts: make(map[int]published),
		done:      make(chan struct{}),
	}
	m.facts.DataIP = ip
	pub := published{Facts: m.facts, Endpoints: make(map[string]string, len(m.table))}
	for i, t := range m.table {
		ln, err := t.Listen()
		var u *transport.Unavailable
		switch {
		case errors.As(err, &u):
			log.Warn(u.Reason, "err", u.Err)
			continue
		case err != nil:
			m.close()
			return nil, err
		}
		m.listeners[i] = ln
		pub.Endpoints[t.Name()] = ln.Addr()
	}
	blob, err := json.Marshal(pub)
	if err != nil {
		m.close()
		return nil, err
	}
	if err := ctl.Put(ctx, factsKey(job.Rank), blob); err != nil {
		m.close()
		return nil, fmt.Errorf("publish topology facts: %w", err)
	}
	for i, ln := range m.listeners {
		if ln != nil {
			m.acceptDone.Add(1)
			go m.accept(m.table[i].Name(), ln)
		}
	}
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

// deliver registers a link accepted from peer, or refuses it.
func (m *linkManager) deliver(peer int, l transport.Link, via string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if peer <= m.rank || peer >= m.size || m.closed || m.links[peer] != nil {
		m.log.Warn("dropping unexpected data link", "peer", peer, "via", via)
		l.Close()
		return
	}
	m.addLink(peer, l, via)
	close(m.arrival(peer))
	m.log.Debug("link accepted", "peer", peer, "via", via)
}

// accept delivers the links ln accepts, which come over the transport
// via, until ln closes.
func (m *linkManager) accept(via string, ln transport.Listener) {
	defer m.acceptDone.Done()
	for {
		l, peer, err := ln.Accept()
		if err != nil {
			return // closed
		}
		m.deliver(peer, l, via)
	}
}

// Link returns the link to peer, opening it if needed. Safe for concurrent
// use.
func (m *linkManager) Link(ctx context.Context, peer int) (transport.Link, error) {
	if l := m.opened(peer); l != nil {
		return l, nil
	}
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
	// This rank dials. The ops of a step run concurrently and may ask for
	// the same peer at once (a send and a receive): one dials, the others
	// wait for its result, so that both ends agree on a single link.
	if d, ok := m.dialing[peer]; ok {
		m.mu.Unlock()
		select {
		case <-d.done:
			return d.link, d.err
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the link to rank %d: %w", peer, ctx.Err())
		}
	}
	d := &pendingDial{done: make(chan struct{})}
	m.dialing[peer] = d
	m.mu.Unlock()
	l, via, err := m.dialUntilClosed(ctx, peer)
	m.mu.Lock()
	delete(m.dialing, peer)
	switch {
	case err != nil:
	case m.closed:
		l.Close()
		l, err = nil, ErrClosed
	default:
		m.addLink(peer, l, via)
	}
	m.mu.Unlock()
	d.link, d.err = l, err
	close(d.done)
	return l, err
}

// dialUntilClosed dials peer, giving up when the manager closes: an abort
// of the job closes it, and a rank dialling a peer that has died (its
// listener gone, so every attempt is refused) must then fail at once with
// the abort rather than retry until ctx ends (seen in CI: a rank reported
// 20 s of refused dials to a peer of a job that another rank had aborted).
func (m *linkManager) dialUntilClosed(ctx context.Context, peer int) (l transport.Link, via string, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-m.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	l, via, err = m.dial(ctx, peer)
	if err != nil {
		select {
		case <-m.done:
			return nil, "", ErrClosed
		default:
		}
	}
	return l, via, err
}

// pendingDial is a dial in progress that other callers wait for.
type pendingDial struct {
	done chan struct{}
	link transport.Link
	err  error
}

// Open returns the link to peer if it is open, without waiting.
func (m *linkManager) Open(peer int) transport.Link {
	if l := m.opened(peer); l != nil {
		return l
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.links[peer]
}

// openLink boxes a link for linkManager.open, with the name of the
// transport it goes over.
type openLink struct {
	transport.Link
	via string
}

// opened returns the open link to peer without the lock, nil when there is
// none (or the manager stopped).
func (m *linkManager) opened(peer int) transport.Link {
	if peer < 0 || peer >= len(m.open) || m.stopped.Load() {
		return nil
	}
	if o := m.open[peer].Load(); o != nil {
		return o.Link
	}
	return nil
}

// warmShm reads every page of every open link that has pages to read
// (shmlink.Link.Warm), so that calls timed from now on time the rings as
// they will stay (posttune.go).
func (m *linkManager) warmShm() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.links {
		if w, ok := l.(interface{ Warm() }); ok {
			w.Warm()
		}
	}
}

// addLink records the link to peer, which goes over the transport via;
// m.mu must be held.
func (m *linkManager) addLink(peer int, l transport.Link, via string) {
	m.links[peer] = l
	m.open[peer].Store(&openLink{l, via})
}

// PeerFacts returns the topology facts peer published, waiting for them.
func (m *linkManager) PeerFacts(ctx context.Context, peer int) (topo.Facts, error) {
	if peer == m.rank {
		return m.facts, nil
	}
	p, err := m.peerPublished(ctx, peer)
	return p.Facts, err
}

// peerPublished returns what peer published under factsKey, waiting for it.
func (m *linkManager) peerPublished(ctx context.Context, peer int) (published, error) {
	m.mu.Lock()
	p, ok := m.peerFacts[peer]
	m.mu.Unlock()
	if ok {
		return p, nil
	}
	blob, err := m.ctl.Get(ctx, factsKey(peer))
	if err != nil {
		return published{}, fmt.Errorf("look up the topology facts of rank %d: %w", peer, err)
	}
	if err := json.Unmarshal(blob, &p); err != nil {
		return published{}, fmt.Errorf("topology facts of rank %d: %w", peer, err)
	}
	m.mu.Lock()
	m.peerFacts[peer] = p
	m.mu.Unlock()
	return p, nil
}

// dial opens a link to the lower rank peer over the first transport of
// the table that can connect the two ranks and that the peer listens on,
// falling back to the next such one when a dial fails (a full /dev/shm,
// say), and returns it with the transport's name.
func (m *linkManager) dial(ctx context.Context, peer int) (transport.Link, string, error) {
	p, err := m.peerPublished(ctx, peer)
	if err != nil {
		return nil, "", err
	}
	var ways []transport.Transport
	for _, t := range m.table {
		switch {
		case !t.CanConnect(m.facts, p.Facts):
		case p.Endpoints[t.Name()] == "":
			// The peer said so itself (and warned, if it had to).
			m.log.Debug(fmt.Sprintf("the rank does not listen on %s, passing it over", t.Name()), "peer", peer)
		default:
			ways = append(ways, t)
		}
	}
	for i, t := range ways {
		l, err := t.Dial(ctx, peer, p.Endpoints[t.Name()])
		if err == nil || ctx.Err() != nil || i == len(ways)-1 {
			return l, t.Name(), err
		}
		// The first fallback is worth a warning; the next ones (a full
		// /dev/shm fails every link after it) only repeat it.
		msg := fmt.Sprintf("a link over %s to a rank failed, using %s", t.Name(), ways[i+1].Name())
		if m.fallbacks.Add(1) == 1 {
			m.log.Warn(msg+" (later links that fall back are logged at TRACE)", "peer", peer, "err", err)
		} else {
			m.log.Debug(msg, "peer", peer, "err", err)
		}
	}
	return nil, "", fmt.Errorf("no transport links rank %d to rank %d", m.rank, peer)
}

// close closes the listeners and every link, releasing the links' memory:
// no collective may be running on them (an abort shuts them first, which
// makes blocked calls fail).
func (m *linkManager) close() error { return m.stop(true) }

// shut makes every call on the links fail, for an abort: ops of the
// executor may be blocked in them, waiting for peers that will never send.
// The links keep their memory (shmlink.Link.Shut) until close, which the
// communicator calls only when no collective is running.
func (m *linkManager) shut() { m.stop(false) }

// stop shuts the manager down: no link opens any more, and every link
// fails its calls; with release, the links are closed too.
func (m *linkManager) stop(release bool) error {
	m.mu.Lock()
	first := !m.closed
	if first {
		m.closed = true
		m.stopped.Store(true)
		close(m.done)
	}
	links := m.links
	if release {
		m.links = nil
	}
	m.mu.Unlock()
	var errs []error
	if first {
		for _, ln := range m.listeners {
			if ln != nil {
				errs = append(errs, ln.Close())
			}
		}
	}
	for _, l := range links {
		if release {
			errs = append(errs, l.Close())
		} else {
			l.Shut()
		}
	}
	m.acceptDone.Wait()
	return errors.Join(errs...)
}

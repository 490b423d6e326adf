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

// switchboard is a rank's side of the data plane that all its link sets
// share: a listener on every transport of its table (transports.go
// builds it: {shm, tcp}, or {tcp} alone when shared memory is off), the
// endpoints and topology facts it published on the control plane
// (factsKey), and the links it accepts, which it hands to the link set
// (linkset.go) whose tag they were dialled with: the communicators of the
// rank and their channels each have their own links, over one listener
// per transport.
//
// To link to a peer it takes the first transport whose CanConnect accepts
// the two ranks' facts and to which the peer published an endpoint, and
// falls back to the next when a dial fails, as NCCL does. The endpoint of
// a rank's shared-memory socket is a random name, so that another local
// user cannot take it first, and only the job's ranks learn it.
type switchboard struct {
	rank, size int // in the job
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

	mu   sync.Mutex
	sets map[uint32]*linkSet // by tag
	// unclaimed holds the links accepted for a tag no set of this rank
	// has yet: a peer may open a communicator's links before this rank
	// has made its side of it.
	unclaimed  map[uint32][]acceptedLink
	peerFacts  map[int]published
	users      int // the link sets open on the board; the last to close closes it
	closed     bool
	acceptDone sync.WaitGroup
}

// acceptedLink is a link accepted from peer (a rank of the job) over the
// transport via.
type acceptedLink struct {
	peer int
	l    transport.Link
	via  string
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

// newSwitchboard listens for data links on every transport of the rank's
// table (transports.go; TCP on ip), and publishes the endpoints with the
// rank's facts. serverCPUs is how many CPUs the ranks of this server are
// bound to together, 0 when they are not bound (tableFacts).
func newSwitchboard(ctx context.Context, job Job, knobs tunables, ip string, facts topo.Facts, serverCPUs int, ctl controlPlane, log *slog.Logger) (*switchboard, error) {
	ts, err := transportsFor(job, knobs, ip, facts, serverCPUs, log)
	if err != nil {
		return nil, err
	}
	m := &switchboard{
		rank: job.Rank, size: job.Size, ctl: ctl, log: log, facts: facts,
		table: ts.table, listeners: make([]transport.Listener, len(ts.table)),
		ringBytes: ts.ringBytes, lazyRings: ts.lazyRings, poll: ts.poll,
		sets:      make(map[uint32]*linkSet),
		unclaimed: make(map[uint32][]acceptedLink),
		peerFacts: make(map[int]published),
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

// deliver hands a link accepted from peer with tag to its set, or keeps
// it until the set is made; a closed board, or a tag of more unclaimed
// links than the job has ranks, refuses it.
func (m *switchboard) deliver(peer int, tag uint32, l transport.Link, via string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if set := m.sets[tag]; set != nil && !m.closed {
		set.deliver(peer, l, via)
		return
	}
	if m.closed || peer < 0 || peer >= m.size || len(m.unclaimed[tag]) >= m.size {
		m.log.Warn("dropping unexpected data link", "peer", peer, "tag", tag, "via", via)
		l.Close()
		return
	}
	m.unclaimed[tag] = append(m.unclaimed[tag], acceptedLink{peer, l, via})
}

// accept delivers the links ln accepts, which come over the transport
// via, until ln closes.
func (m *switchboard) accept(via string, ln transport.Listener) {
	defer m.acceptDone.Done()
	for {
		l, peer, tag, err := ln.Accept()
		if err != nil {
			return // closed
		}
		m.deliver(peer, tag, l, via)
	}
}

// PeerFacts returns the topology facts peer published, waiting for them.
func (m *switchboard) PeerFacts(ctx context.Context, peer int) (topo.Facts, error) {
	if peer == m.rank {
		return m.facts, nil
	}
	p, err := m.peerPublished(ctx, peer)
	return p.Facts, err
}

// peerPublished returns what peer published under factsKey, waiting for it.
func (m *switchboard) peerPublished(ctx context.Context, peer int) (published, error) {
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

// dial opens a link with tag to peer (a rank of the job) over the first
// transport of the table that can connect the two ranks and that the peer
// listens on, falling back to the next such one when a dial fails (a full
// /dev/shm, say), and returns it with the transport's name.
func (m *switchboard) dial(ctx context.Context, peer int, tag uint32) (transport.Link, string, error) {
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
		l, err := t.Dial(ctx, peer, tag, p.Endpoints[t.Name()])
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

// register makes set the receiver of the links dialled with its tag,
// handing it those that came first; a tag already taken is an error.
func (m *switchboard) register(set *linkSet) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.sets[set.tag] != nil {
		return fmt.Errorf("link tag %#x is taken by another communicator of this rank", set.tag)
	}
	m.sets[set.tag] = set
	m.users++
	for _, a := range m.unclaimed[set.tag] {
		set.deliver(a.peer, a.l, a.via)
	}
	delete(m.unclaimed, set.tag)
	return nil
}

// release forgets set, which has closed; the last set to go closes the
// board.
func (m *switchboard) release(set *linkSet) error {
	m.mu.Lock()
	if m.sets[set.tag] == set {
		delete(m.sets, set.tag)
		m.users--
	}
	last := m.users == 0
	m.mu.Unlock()
	if !last {
		return nil
	}
	return m.close()
}

// close closes the listeners and the links no set claimed; the sets'
// links are their own.
func (m *switchboard) close() error {
	m.mu.Lock()
	first := !m.closed
	m.closed = true
	unclaimed := m.unclaimed
	m.unclaimed = nil
	m.mu.Unlock()
	if !first {
		return nil
	}
	var errs []error
	for _, ln := range m.listeners {
		if ln != nil {
			errs = append(errs, ln.Close())
		}
	}
	m.acceptDone.Wait()
	for _, links := range unclaimed {
		for _, a := range links {
			errs = append(errs, a.l.Close())
		}
	}
	return errors.Join(errs...)
}

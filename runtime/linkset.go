package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// A link tag names the link set a link belongs to: a communicator of the
// job and one of its channels. The job's own communicator is 0; the low
// tagChannelBits bits hold the channel.
const (
	tagChannelBits = 4
	maxLinkSets    = 1 << tagChannelBits // channels per communicator
)

// linkTag is the tag of channel ch of communicator comm.
func linkTag(comm uint32, ch int) uint32 { return comm<<tagChannelBits | uint32(ch) }

// linkSet is the links of one communicator's channel: one link to each
// peer its plans talk to, opened lazily, the first time the executor
// needs the peer, through the rank's switchboard. Of two ranks, the higher
// one (in the set) dials and the lower one accepts, so both sides agree on
// one link without talking first.
type linkSet struct {
	board   *switchboard
	tag     uint32
	rank    int   // this rank's, in the set
	members []int // the job's rank of each rank of the set
	// index is members inverted: the set's rank of a rank of the job,
	// -1 for those outside it.
	index []int

	mu    sync.Mutex
	links map[int]transport.Link
	// open is links indexed by peer, for the executor's two lookups per
	// op without the lock (whose lock and unlock were 7% of an 8-byte
	// AllReduce's profile): set under mu as links open, ignored once the
	// set stops.
	open     []atomic.Pointer[openLink]
	stopped  atomic.Bool
	arrived  map[int]chan struct{} // closed when a link from that (higher) peer is accepted
	dialing  map[int]*pendingDial
	closed   bool
	released bool
	done     chan struct{} // closed by stop
}

// newLinkSet makes the link set with tag of the ranks members (ranks of
// the job, in the set's order), of which this rank is the rank-th, and
// registers it on board, which hands it the links its peers dial.
func newLinkSet(board *switchboard, tag uint32, members []int, rank int) (*linkSet, error) {
	index := make([]int, board.size)
	for i := range index {
		index[i] = -1
	}
	for i, r := range members {
		if r < 0 || r >= board.size || index[r] >= 0 {
			return nil, fmt.Errorf("link set %#x: member %d of %d ranks listed twice or out of range", tag, r, board.size)
		}
		index[r] = i
	}
	if rank < 0 || rank >= len(members) || members[rank] != board.rank {
		return nil, fmt.Errorf("link set %#x: rank %d is not this rank (%d of the job)", tag, rank, board.rank)
	}
	s := &linkSet{
		board: board, tag: tag, rank: rank, members: members, index: index,
		links:   make(map[int]transport.Link),
		open:    make([]atomic.Pointer[openLink], len(members)),
		arrived: make(map[int]chan struct{}),
		dialing: make(map[int]*pendingDial),
		done:    make(chan struct{}),
	}
	if err := board.register(s); err != nil {
		return nil, err
	}
	return s, nil
}

// worldSet is the set of every rank of the job, in the job's order.
func worldSet(board *switchboard, tag uint32) (*linkSet, error) {
	members := make([]int, board.size)
	for i := range members {
		members[i] = i
	}
	return newLinkSet(board, tag, members, board.rank)
}

func (s *linkSet) arrival(peer int) chan struct{} {
	ch, ok := s.arrived[peer]
	if !ok {
		ch = make(chan struct{})
		s.arrived[peer] = ch
	}
	return ch
}

// deliver registers a link the board accepted from jobRank, or refuses
// it; the board's lock is held.
func (s *linkSet) deliver(jobRank int, l transport.Link, via string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	peer := s.index[jobRank]
	if peer <= s.rank || s.closed || s.links[peer] != nil {
		s.board.log.Warn("dropping unexpected data link", "peer", jobRank, "tag", s.tag, "via", via)
		l.Close()
		return
	}
	s.addLink(peer, l, via)
	close(s.arrival(peer))
	s.board.log.Debug("link accepted", "peer", jobRank, "tag", s.tag, "via", via)
}

// Link returns the link to peer (a rank of the set), opening it if
// needed. Safe for concurrent use.
func (s *linkSet) Link(ctx context.Context, peer int) (transport.Link, error) {
	if l := s.opened(peer); l != nil {
		return l, nil
	}
	if peer < 0 || peer >= len(s.members) || peer == s.rank {
		return nil, fmt.Errorf("no link from rank %d to rank %d of %d", s.rank, peer, len(s.members))
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if l := s.links[peer]; l != nil {
		s.mu.Unlock()
		return l, nil
	}
	if peer > s.rank {
		ch := s.arrival(peer)
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for rank %d to connect: %w", peer, ctx.Err())
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return nil, ErrClosed
		}
		return s.links[peer], nil
	}
	// This rank dials. The ops of a step run concurrently and may ask for
	// the same peer at once (a send and a receive): one dials, the others
	// wait for its result, so that both ends agree on a single link.
	if d, ok := s.dialing[peer]; ok {
		s.mu.Unlock()
		select {
		case <-d.done:
			return d.link, d.err
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the link to rank %d: %w", peer, ctx.Err())
		}
	}
	d := &pendingDial{done: make(chan struct{})}
	s.dialing[peer] = d
	s.mu.Unlock()
	l, via, err := s.dialUntilClosed(ctx, peer)
	s.mu.Lock()
	delete(s.dialing, peer)
	switch {
	case err != nil:
	case s.closed:
		l.Close()
		l, err = nil, ErrClosed
	default:
		s.addLink(peer, l, via)
	}
	s.mu.Unlock()
	d.link, d.err = l, err
	close(d.done)
	return l, err
}

// dialUntilClosed dials peer, giving up when the set stops: an abort of
// the job stops it, and a rank dialling a peer that has died (its
// listener gone, so every attempt is refused) must then fail at once with
// the abort rather than retry until ctx ends.
func (s *linkSet) dialUntilClosed(ctx context.Context, peer int) (l transport.Link, via string, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	l, via, err = s.board.dial(ctx, s.members[peer], s.tag)
	if err != nil {
		select {
		case <-s.done:
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
func (s *linkSet) Open(peer int) transport.Link {
	if l := s.opened(peer); l != nil {
		return l
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links[peer]
}

// openLink boxes a link for linkSet.open, with the name of the transport
// it goes over.
type openLink struct {
	transport.Link
	via string
}

// opened returns the open link to peer without the lock, nil when there is
// none (or the set stopped).
func (s *linkSet) opened(peer int) transport.Link {
	if peer < 0 || peer >= len(s.open) || s.stopped.Load() {
		return nil
	}
	if o := s.open[peer].Load(); o != nil {
		return o.Link
	}
	return nil
}

// addLink records the link to peer, which goes over the transport via;
// s.mu must be held.
func (s *linkSet) addLink(peer int, l transport.Link, via string) {
	s.links[peer] = l
	s.open[peer].Store(&openLink{l, via})
}

// warmShm reads every page of every open link that has pages to read
// (shmlink.Link.Warm), so that calls timed from now on time the rings as
// they will stay (posttune.go).
func (s *linkSet) warmShm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.links {
		if w, ok := l.(interface{ Warm() }); ok {
			w.Warm()
		}
	}
}

// PeerFacts returns the topology facts peer (a rank of the set)
// published, waiting for them.
func (s *linkSet) PeerFacts(ctx context.Context, peer int) (topo.Facts, error) {
	return s.board.PeerFacts(ctx, s.members[peer])
}

// close closes every link, releasing the links' memory, and leaves the
// board (the last set to leave closes it): no collective may be running
// on them (an abort shuts them first, which makes blocked calls fail).
func (s *linkSet) close() error { return s.stop(true) }

// shut makes every call on the links fail, for an abort: ops of the
// executor may be blocked in them, waiting for peers that will never send.
// The links keep their memory (shmlink.Link.Shut) until close, which the
// communicator calls only when no collective is running.
func (s *linkSet) shut() { s.stop(false) }

// stop stops the set: no link opens any more, and every link fails its
// calls; with release, the links are closed too and the set leaves the
// board.
func (s *linkSet) stop(release bool) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.stopped.Store(true)
		close(s.done)
	}
	links := s.links
	leave := release && !s.released
	if release {
		s.links = nil
		s.released = true
	}
	s.mu.Unlock()
	var errs []error
	for _, l := range links {
		if release {
			errs = append(errs, l.Close())
		} else {
			l.Shut()
		}
	}
	if leave {
		errs = append(errs, s.board.release(s))
	}
	return errors.Join(errs...)
}

package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	"github.com/hcclrun/hcclrun/netio/control"
	"github.com/hcclrun/hcclrun/runtime/executor"
)

// Sub-communicators (Comm.Split), as NCCL's ncclCommSplit and MPI's
// MPI_Comm_split make them.
//
// A child is a communicator of its own over the rank's one switchboard:
// it shares with its parent, and with every other communicator of the
// rank, the listeners, the endpoints and topology facts published at Init
// and the control connection; it has its own link set (its own links to
// its peers, dialled with its own tag over the same listeners), executor,
// selector, lock, sequence numbers and plan cache. So a parent and its
// children, and sibling children, run collectives at the same time from
// different goroutines without meeting on a link.

// commBits is how many bits of a link tag name the communicator.
const commBits = 32 - tagChannelBits

// family is what a communicator knows of its place among the rank's
// communicators: its id (the communicator part of its link tags, 0 for
// the job's) and what it shares with the others.
type family struct {
	id     uint32
	shared *sharedCtl
	// stop is closed by Close: the communicator's control watcher ends
	// while the control connection stays open for the others.
	stop chan struct{}

	splitMu sync.Mutex // held through a Split: splits numbers them
	splits  uint64     // the splits made on this communicator so far
}

// sharedCtl is the control connection of a rank's communicators,
// counted: the last communicator to close closes it, so that children
// may outlive the communicator Init returned.
type sharedCtl struct {
	ctl   controlPlane
	mu    sync.Mutex
	users int
}

func newFamily(ctl controlPlane) family {
	return family{shared: &sharedCtl{ctl: ctl, users: 1}, stop: make(chan struct{})}
}

// hold counts one more communicator on the connection.
func (s *sharedCtl) hold() {
	s.mu.Lock()
	s.users++
	s.mu.Unlock()
}

// release counts one communicator off, and closes the connection after
// the last.
func (s *sharedCtl) release() error {
	s.mu.Lock()
	s.users--
	last := s.users == 0
	s.mu.Unlock()
	if !last {
		return nil
	}
	return s.ctl.Close()
}

// splitMark opens every rank's part of a Split's exchange, so that a
// rank whose peer made another AllGather of the same shape tells it.
const splitMark = 0x53706c6974 // "Split"

// splitCandidates is how many ids a Split tries for its children: the
// first that no rank of the parent has in use wins.
const splitCandidates = 16

// Each rank's part of a Split's exchange, in int64s.
const (
	splitFieldMark = iota
	splitFieldColor
	splitFieldKey
	splitFieldFree // bit i: candidate id i is free on the rank
	splitFieldNode // the rank's server (Job.NodeRank), for LocalRank
	splitFields
)

// NoColor is the color of a rank that takes part in a Split but in none
// of the communicators it makes, as NCCL's NCCL_SPLIT_NOCOLOR and MPI's
// MPI_UNDEFINED: its Split returns nil and no error. Any negative color
// does the same.
const NoColor = -1

// Split divides the communicator's ranks by color into new communicators,
// as MPI_Comm_split and ncclCommSplit do: the ranks that pass the same
// color make one child, in which they are numbered by key, ties broken by
// their rank in c. A negative color (NoColor) leaves the rank out: Split
// returns nil, nil there.
//
// Split is a collective on c: every rank of c calls it, in the same order
// as c's other collectives (it makes one AllGather of every rank's color
// and key, and a rank that calls something else instead fails with
// ErrMismatch, or ErrAborted when the job is aborted by a peer's
// failure). The child has its own numbering (Rank, Size, LocalRank,
// LocalSize, Topology, Links and errors name its ranks), its own server
// layout (c's restricted to its ranks) and so its own algorithm choices,
// and starts with c's knobs and c's current SetAlgo policy. It links its
// ranks with links of its own over the listeners every communicator of
// the rank shares, so that collectives on c and its children, and on
// sibling children, may run concurrently from different goroutines.
//
// Children are independent of c for their lifetime: c may be closed
// first. An abort (a failed call, Abort on any communicator, a lost
// rank) breaks every communicator of the job. HCCL_EXEC_TIMEOUT bounds a
// child's calls as it bounds c's; the ranks' heartbeats report the
// progress of the job's communicator (the one Init returned) only, so a
// child that times out names the ranks it has that went silent, not
// which of its calls each has reached.
func (c *Comm) Split(ctx context.Context, color, key int) (*Comm, error) {
	c.splitMu.Lock()
	defer c.splitMu.Unlock()
	n := c.splits
	c.splits++

	board := c.links.board
	cands := make([]uint32, splitCandidates)
	var free int64
	for i := range cands {
		cands[i] = childID(c.id, n, i)
		if !board.commTaken(cands[i]) {
			free |= 1 << i
		}
	}
	mine := make([]int64, splitFields)
	mine[splitFieldMark] = splitMark
	mine[splitFieldColor] = int64(color)
	mine[splitFieldKey] = int64(key)
	mine[splitFieldFree] = free
	mine[splitFieldNode] = int64(c.job.NodeRank)
	all := make([]int64, splitFields*c.Size())
	if err := AllGather(ctx, c, mine, all); err != nil {
		if oe, ok := err.(*OpError); ok {
			e := *oe
			e.Op, e.Err = "Split", fmt.Errorf("the Split's AllGather of colors and keys: %w", oe.Err)
			return nil, &e
		}
		return nil, c.splitError(err)
	}
	part := func(r, f int) int64 { return all[r*splitFields+f] }
	free = -1
	for r := range c.Size() {
		if part(r, splitFieldMark) != splitMark {
			// The peer made an AllGather of the Split's shape but not
			// the Split: it has moved on with garbage, so the job
			// cannot go on.
			err := fmt.Errorf("%w: rank %d called another AllGather of %d int64 where this rank called Split", ErrMismatch, r, splitFields)
			c.abortJob(err)
			return nil, c.splitError(err)
		}
		free &= part(r, splitFieldFree)
	}
	if color < 0 {
		return nil, nil
	}
	pick := -1
	for i := range cands {
		if free&(1<<i) != 0 {
			pick = i
			break
		}
	}
	if pick < 0 {
		// Every candidate is some communicator's on some rank: every
		// rank sees the same and fails alike.
		return nil, c.splitError(fmt.Errorf("the %d ids a split of communicator %#x tries are all in use on some rank", splitCandidates, c.id))
	}
	var members []int // ranks of c, in the child's order
	for r := range c.Size() {
		if part(r, splitFieldColor) == int64(color) {
			members = append(members, r)
		}
	}
	slices.SortStableFunc(members, func(a, b int) int {
		if ka, kb := part(a, splitFieldKey), part(b, splitFieldKey); ka != kb {
			if ka < kb {
				return -1
			}
			return 1
		}
		return a - b
	})
	rank := slices.Index(members, c.Rank())
	local, localSize := 0, 0
	for i, r := range members {
		if part(r, splitFieldNode) == int64(c.job.NodeRank) {
			if i < rank {
				local++
			}
			localSize++
		}
	}
	child, err := c.child(cands[pick], members, rank, local, localSize)
	if err != nil {
		// Only a concurrent Split of another communicator of this rank
		// can have taken the id since the exchange: the child's other
		// ranks would wait for this one, so the job cannot go on.
		err = fmt.Errorf("make communicator %#x: %w", cands[pick], err)
		c.abortJob(err)
		return nil, c.splitError(err)
	}
	c.log.Debug("split", "color", color, "key", key, "comm", fmt.Sprintf("%#x", child.id), "comm_rank", rank, "comm_size", len(members))
	return child, nil
}

func (c *Comm) splitError(err error) error {
	return &OpError{Op: "Split", Rank: c.Rank(), Peer: -1, Step: -1, Err: err}
}

// childID is the i-th candidate id of the n-th split of communicator
// parent: a hash, so that every rank derives it alike without talking,
// and communicators made by different splits rarely meet; 28 bits (a
// link tag's communicator part), never 0 (the job's).
func childID(parent uint32, n uint64, i int) uint32 {
	var b [16]byte
	binary.LittleEndian.PutUint32(b[0:], parent)
	binary.LittleEndian.PutUint64(b[4:], n)
	binary.LittleEndian.PutUint32(b[12:], uint32(i))
	h := fnv.New32a()
	h.Write(b[:])
	id := h.Sum32() & (1<<commBits - 1)
	if id == 0 {
		id = 1
	}
	return id
}

// child makes the communicator id of c's ranks members (in its order),
// of which this rank is the rank-th and the local-th of localSize on its
// server.
func (c *Comm) child(id uint32, members []int, rank, local, localSize int) (*Comm, error) {
	board := c.links.board
	jobRanks := make([]int, len(members))
	for i, r := range members {
		jobRanks[i] = c.links.members[r]
	}
	links, err := newLinkSet(board, linkTag(id, 0), jobRanks, rank)
	if err != nil {
		return nil, err
	}
	job := c.job
	job.Rank, job.Size, job.LocalRank, job.LocalSize = rank, len(members), local, localSize
	log := c.log.With("comm", fmt.Sprintf("%#x", id), "comm_rank", rank)
	c.mu.Lock()
	sel := c.sel.Fork(log)
	c.mu.Unlock()
	k := &Comm{
		job: job, knobs: c.knobs, log: log, ctl: c.ctl, links: links, sel: sel,
		layout:    c.layout.Sub(members),
		p2pSeq:    make(map[int]uint64),
		watchDone: make(chan struct{}),
		family:    family{id: id, shared: c.shared, stop: make(chan struct{})},
	}
	c.shared.hold()
	k.obs = newChildObserver(c, k) // trace.go
	k.exec = executor.New(rank, links, k.execConfig())
	go k.watchControl()
	return k, nil
}

// brokenNow is the communicator's failure, if any, including an abort
// the control plane has delivered that its watcher has not yet recorded:
// another communicator of the rank may have aborted the job a moment ago,
// and a call started now would read its peers' frames of before the
// abort.
func (c *Comm) brokenNow() error {
	if err := c.brokenErr(); err != nil {
		return err
	}
	select {
	case <-c.ctl.Done():
		<-c.watchDone // it records the reason, then ends
		return c.brokenErr()
	default:
		return nil
	}
}

// whoAmI names this rank in abort reasons, which every rank of the job
// reads: by its rank in the job, and in a child by its rank there too.
func (c *Comm) whoAmI() string {
	if c.id == 0 {
		return fmt.Sprintf("rank %d", c.job.Rank)
	}
	return fmt.Sprintf("rank %d (rank %d of communicator %#x)", c.links.board.rank, c.job.Rank, c.id)
}

// commTaken reports whether a link set of communicator id is open on
// the rank.
func (m *switchboard) commTaken(id uint32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for tag := range m.sets {
		if tag>>tagChannelBits == id {
			return true
		}
	}
	return false
}

// reportsProgress tells whether the communicator's calls are the
// progress the rank's heartbeats report: the control plane keeps one
// call number per rank, and only the job's communicator numbers its
// calls alike on every rank of the job.
func (c *Comm) reportsProgress() bool { return c.id == 0 }

// childStragglers explains a child's timed-out call from the job's
// status: the heartbeats count the job's communicator's calls, not the
// child's, so it names the child's ranks that are silent, lost, or gone.
func (c *Comm) childStragglers(st []control.RankStatus) string {
	members := c.links.members
	var mine []control.RankStatus
	for _, s := range st {
		if slices.Contains(members, s.Rank) {
			mine = append(mine, s)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "communicator %#x (job ranks %v): ", c.id, members)
	if s := control.Stragglers(mine, 0, c.ctl.Heartbeat()); len(s) > 0 {
		b.WriteString(control.FormatStragglers(s))
		b.WriteString(" (job ranks)")
		return b.String()
	}
	b.WriteString("every rank is alive (heartbeats report the job's communicator's calls, not this one's)")
	return b.String()
}

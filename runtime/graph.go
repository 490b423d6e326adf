package runtime

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// Graph mode: a step's collectives recorded once (with their buffers, not
// their data), compiled once on every rank, then replayed each step.
// Compile checks that every rank recorded the same graph and packs runs of
// adjacent AllReduces of one dtype and op into one AllReduce over a staging
// buffer (a bucket, as DDP does), which saves all but one round of latency
// for the small ones.

// DefaultGraphFuseBytes is the cap of a fused AllReduce's staging buffer
// when neither Graph.FuseBytes nor HCCL_GRAPH_FUSE_BYTES sets one: DDP's
// bucket size.
const DefaultGraphFuseBytes = 25 << 20

// Graph records collectives on a communicator for Compile. Record with the
// Graph* functions (GraphAllReduce, ...), which validate their arguments as
// the collectives do and send nothing. A Graph is not safe for concurrent
// use; it may be compiled more than once.
type Graph struct {
	// FuseBytes caps the staging buffer of a fused AllReduce, in bytes:
	// 0 takes HCCL_GRAPH_FUSE_BYTES or DefaultGraphFuseBytes, a negative
	// value fuses nothing.
	FuseBytes int

	c     *Comm
	nodes []call
	err   error // the first recording error, returned by Compile
}

// NewGraph returns an empty graph on c.
func NewGraph(c *Comm) *Graph { return &Graph{c: c} }

// Len returns the number of collectives recorded.
func (g *Graph) Len() int { return len(g.nodes) }

func (g *Graph) add(a call, err error) error {
	if err != nil {
		if g.err == nil {
			g.err = fmt.Errorf("graph node %d: %w", len(g.nodes), err)
		}
		return err
	}
	g.nodes = append(g.nodes, a)
	return nil
}

// GraphAllReduce records AllReduce(send, recv, op) on g.
func GraphAllReduce[T Element](g *Graph, send, recv []T, op ReduceOp) error {
	return g.add(allReduceCall(g.c, send, recv, op))
}

// GraphBroadcast records Broadcast(buf, root) on g.
func GraphBroadcast[T Element](g *Graph, buf []T, root int) error {
	return g.add(broadcastCall(g.c, buf, root))
}

// GraphReduce records Reduce(send, recv, op, root) on g.
func GraphReduce[T Element](g *Graph, send, recv []T, op ReduceOp, root int) error {
	return g.add(reduceCall(g.c, send, recv, op, root))
}

// GraphAllGather records AllGather(send, recv) on g.
func GraphAllGather[T Element](g *Graph, send, recv []T) error {
	return g.add(allGatherCall(g.c, send, recv))
}

// GraphReduceScatter records ReduceScatter(send, recv, op) on g.
func GraphReduceScatter[T Element](g *Graph, send, recv []T, op ReduceOp) error {
	return g.add(reduceScatterCall(g.c, send, recv, op))
}

// GraphAlltoAll records AlltoAll(send, recv) on g.
func GraphAlltoAll[T Element](g *Graph, send, recv []T) error {
	return g.add(alltoAllCall(g.c, send, recv))
}

// GraphAlltoAllV records AlltoAllV on g. The count and displacement slices
// are held, not copied: change them only between replays, and on every
// rank consistently.
func GraphAlltoAllV[T Element](g *Graph, send []T, sendCounts, sdispls []int,
	recv []T, recvCounts, rdispls []int) error {
	return g.add(alltoAllVCall(g.c, send, sendCounts, sdispls, recv, recvCounts, rdispls))
}

// Barrier records a Barrier on g.
func (g *Graph) Barrier() error {
	return g.add(call{req: plan.Request{Coll: plan.Barrier}, dtype: dtypeOf[uint8]()}, nil)
}

// Executable is a compiled graph. Run replays it; it is not safe for
// concurrent use, and runs on its communicator in order with the
// communicator's other calls, as the collectives do.
type Executable struct {
	c       *Comm
	steps   []graphStep
	staging []byte
	nodesIn int
}

// graphStep is one collective of a replay: a recorded call, or a fused
// AllReduce over staging whose parts are copied in before and out after.
type graphStep struct {
	a     call
	parts []fusedPart
}

type fusedPart struct {
	send, recv []byte
	off        int // in staging, bytes
}

// descriptor is what every rank must agree on for one node: collective,
// dtype, op, count, root (AlltoAllV's counts differ by rank and are
// checked by the frames during the replay).
type descriptor [5]uint64

const noNode = ^uint64(0)

func descOf(a *call) descriptor {
	d := descriptor{uint64(a.req.Coll), uint64(a.dtype), 0, uint64(a.req.Count), 0}
	if a.reduces {
		d[2] = uint64(a.op) + 1
	}
	if a.req.Coll == plan.Broadcast || a.req.Coll == plan.Reduce {
		d[4] = uint64(a.req.Root)
	}
	return d
}

func (d descriptor) String() string {
	if d[0] == noNode {
		return "no node (the graph ended)"
	}
	s := fmt.Sprintf("%s %s count %d", plan.Coll(d[0]), reduce.DType(d[1]), d[3])
	if d[2] != 0 {
		s += " op " + ReduceOp(d[2]-1).String()
	}
	if c := plan.Coll(d[0]); c == plan.Broadcast || c == plan.Reduce {
		s += fmt.Sprintf(" root %d", d[4])
	}
	return s
}

// Compile checks with one AllGather that every rank recorded the same
// graph (ErrMismatch on every rank otherwise, naming the first differing
// node and two ranks that differ on it), fuses, chooses each collective's
// algorithm and allocates the staging buffers. Every rank must call it.
func (g *Graph) Compile(ctx context.Context) (*Executable, error) {
	c := g.c
	if g.err != nil {
		return nil, g.err
	}
	descs := make([]descriptor, len(g.nodes))
	h := fnv.New64a()
	var buf [8]byte
	for i := range g.nodes {
		descs[i] = descOf(&g.nodes[i])
		for _, v := range descs[i] {
			binary.LittleEndian.PutUint64(buf[:], v)
			h.Write(buf[:])
		}
	}
	if err := c.agreeGraph(ctx, h.Sum64(), descs); err != nil {
		return nil, err
	}

	capBytes := g.FuseBytes
	if capBytes == 0 {
		capBytes = c.knobs.GraphFuseBytes
	}
	if capBytes == 0 {
		capBytes = DefaultGraphFuseBytes
	}
	e := &Executable{c: c, nodesIn: len(g.nodes)}
	var groups []int // sizes of the fused groups
	total := 0
	type span struct{ lo, hi, bytes int }
	var spans []span
	for i := 0; i < len(g.nodes); {
		j, bytes := i+1, nodeBytes(&g.nodes[i])
		if capBytes > 0 && fusible(&g.nodes[i]) && bytes < capBytes {
			for j < len(g.nodes) && fusible(&g.nodes[j]) && sameKind(&g.nodes[i], &g.nodes[j]) &&
				bytes+nodeBytes(&g.nodes[j]) <= capBytes {
				bytes += nodeBytes(&g.nodes[j])
				j++
			}
		}
		if j-i > 1 {
			spans = append(spans, span{i, j, bytes})
			total = max(total, bytes)
		} else {
			spans = append(spans, span{i, j, -1})
		}
		i = j
	}
	// One staging buffer serves every fused step: they run one after
	// another. Touched once here so that the first replay does not pay
	// for the pages.
	e.staging = make([]byte, total)
	for i := 0; i < len(e.staging); i += 4096 {
		e.staging[i] = 0
	}
	for _, s := range spans {
		if s.bytes < 0 {
			e.steps = append(e.steps, graphStep{a: g.nodes[s.lo]})
			continue
		}
		first := &g.nodes[s.lo]
		st := graphStep{a: call{
			req:   plan.Request{Coll: plan.AllReduce, Count: s.bytes / first.dtype.Size(), InPlace: true},
			dtype: first.dtype, op: first.op, reduces: true,
			send: e.staging[:s.bytes], recv: e.staging[:s.bytes], avgSlice: e.staging[:s.bytes],
		}}
		off := 0
		for k := s.lo; k < s.hi; k++ {
			n := &g.nodes[k]
			st.parts = append(st.parts, fusedPart{send: n.send, recv: n.recv, off: off})
			off += len(n.send)
		}
		groups = append(groups, s.hi-s.lo)
		e.steps = append(e.steps, st)
	}
	if err := e.choose(groups); err != nil {
		return nil, err
	}
	return e, nil
}

func nodeBytes(a *call) int { return a.req.Count * a.dtype.Size() }

// fuseMax is the largest AllReduce a graph packs into a bucket: from 256
// KiB the shm links read payloads in place from the caller's buffer
// (tunables.ShmDirect), which a copy through staging would give up, and
// a call that size pays its latency only a few times over per byte
// (docs/performance.md#graph-mode).
const fuseMax = 256 << 10

func fusible(a *call) bool { return a.req.Coll == plan.AllReduce && nodeBytes(a) < fuseMax }

func sameKind(a, b *call) bool { return a.dtype == b.dtype && a.op == b.op }

// choose picks each step's algorithm now (the selector caches the
// decisions, so replays find them) and logs the compiled plan at INFO.
func (e *Executable) choose(groups []int) error {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	algos := make([]string, len(e.steps))
	for i := range e.steps {
		a := &e.steps[i].a
		req := a.req
		req.Rank, req.Size = c.job.Rank, c.job.Size
		choice, err := c.chooseAlgorithm(&req, a.dtype.Size())
		if err != nil {
			return &OpError{Op: "Graph", Rank: c.job.Rank, Peer: -1, Step: -1,
				Err: fmt.Errorf("%w: node %d (%s): %w", ErrInvalidArgument, i, a.req.Coll, err)}
		}
		algos[i] = fmt.Sprintf("%s:%s", a.req.Coll, choice.Algo.Name())
	}
	c.log.Info("graph compiled", "nodes_in", e.nodesIn, "nodes_out", len(e.steps),
		"fused_groups", fmt.Sprint(groups), "staging_bytes", len(e.staging),
		"algorithms", strings.Join(algos, " "))
	return nil
}

// agreeGraph gathers every rank's graph hash and node count; when they
// differ it gathers the descriptors too, so that every rank names the same
// first differing node.
func (c *Comm) agreeGraph(ctx context.Context, hash uint64, descs []descriptor) error {
	n := c.Size()
	mine := []uint64{hash, uint64(len(descs))}
	all := make([]uint64, 2*n)
	if err := AllGather(ctx, c, mine, all); err != nil {
		return err
	}
	same, longest := true, 0
	for r := range n {
		same = same && all[2*r] == hash && all[2*r+1] == uint64(len(descs))
		longest = max(longest, int(all[2*r+1]))
	}
	if same {
		return nil
	}
	width := len(descriptor{})
	mineD := make([]uint64, longest*width)
	for i := range mineD {
		mineD[i] = noNode
	}
	for i, d := range descs {
		copy(mineD[i*width:], d[:])
	}
	allD := make([]uint64, n*len(mineD))
	if err := AllGather(ctx, c, mineD, allD); err != nil {
		return err
	}
	at := func(r, i int) (d descriptor) {
		copy(d[:], allD[r*len(mineD)+i*width:])
		return d
	}
	for i := range longest {
		for r := 1; r < n; r++ {
			if a, b := at(0, i), at(r, i); a != b {
				peer := r // the other rank of the two named
				if c.job.Rank == r {
					peer = 0
				}
				return &OpError{Op: "Graph", Rank: c.job.Rank, Peer: peer, Step: -1,
					Err: fmt.Errorf("%w: graph node %d: rank 0 recorded %s, rank %d recorded %s", ErrMismatch, i, a, r, b)}
			}
		}
	}
	// Same descriptors, different hashes: cannot happen but for a bug.
	return &OpError{Op: "Graph", Rank: c.job.Rank, Peer: -1, Step: -1,
		Err: fmt.Errorf("%w: graph hashes differ across ranks", ErrMismatch)}
}

// Run replays the graph: every rank must run it, as it would make the
// calls. Buffers are read and written as they are at the time of the run.
func (e *Executable) Run(ctx context.Context) error {
	if e.c == nil {
		return &OpError{Op: "Graph", Rank: -1, Peer: -1, Step: -1, Err: ErrClosed}
	}
	for i := range e.steps {
		s := &e.steps[i]
		for _, p := range s.parts {
			copy(e.staging[p.off:], p.send)
		}
		if err := e.c.run(ctx, &s.a); err != nil {
			return err
		}
		for _, p := range s.parts {
			copy(p.recv, e.staging[p.off:p.off+len(p.recv)])
		}
	}
	return nil
}

// Steps returns the number of collectives a replay makes (after fusion).
func (e *Executable) Steps() int { return len(e.steps) }

// Close releases the staging buffers; Run then fails with ErrClosed. It
// does not close the communicator.
func (e *Executable) Close() error {
	e.c, e.steps, e.staging = nil, nil, nil
	return nil
}

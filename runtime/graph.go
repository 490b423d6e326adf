package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Graph mode: a step's collectives recorded once (with their buffers, not
// their data), compiled once on every rank, then replayed each step.
// Compile checks that every rank recorded the same graph
// (graph_agree.go), rewrites it (graph_fuse.go: a ReduceScatter and the
// AllGather of its result into one AllReduce, runs of small AllReduces
// into one over a staging buffer, as DDP's buckets do) and binds each
// collective left to its plan (graph_exec.go), so that a replay makes no
// choice and no check that the frames do not make anyway.

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
	// err is the first recording error, which Compile returns here and
	// makes the other ranks' Compile fail on, naming this rank and node
	// errNode.
	err     error
	errNode int
}

// NewGraph returns an empty graph on c.
func NewGraph(c *Comm) *Graph { return &Graph{c: c} }

// Len returns the number of collectives recorded.
func (g *Graph) Len() int { return len(g.nodes) }

func (g *Graph) add(a call, err error) error {
	if err != nil {
		// The recording call failed, not the collective: name it.
		var oe *OpError
		if errors.As(err, &oe) && error(oe) == err {
			r := *oe
			r.Op = "Graph" + r.Op
			err = &r
		}
		g.Fail(err)
		return err
	}
	g.nodes = append(g.nodes, a)
	return nil
}

// Fail records err as the failure of the graph's next node, as a Graph*
// call that fails does: Compile then returns it on this rank and fails
// on every other rank too, naming this one, rather than leave them
// waiting for a rank that stopped. It is for callers that check
// arguments of their own before they record (the C interface). Only the
// first failure is kept.
func (g *Graph) Fail(err error) {
	if g.err == nil {
		g.err, g.errNode = fmt.Errorf("graph node %d: %w", len(g.nodes), err), len(g.nodes)
	}
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

// Compile checks that every rank recorded the same graph (ErrMismatch on
// every rank otherwise, naming the first differing node and two ranks
// that differ on it; a rank whose recording failed returns that failure,
// and the others ErrInvalidArgument naming it), rewrites it, chooses each collective's algorithm
// and plan and allocates the staging buffer. Every rank must call it; it
// makes one to three collectives of its own.
func (g *Graph) Compile(ctx context.Context) (*Executable, error) {
	c := g.c
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
	capBytes := g.FuseBytes
	if capBytes == 0 {
		capBytes = c.knobs.GraphFuseBytes
	}
	if capBytes == 0 {
		capBytes = DefaultGraphFuseBytes
	}
	capBytes = max(capBytes, -1)
	if err := c.agreeGraph(ctx, graphSummary{hash: h.Sum64(), descs: descs, capBytes: capBytes,
		failed: g.err, failedNode: g.errNode}); err != nil {
		return nil, err
	}
	pairs := scatterGatherPairs(g.nodes)
	mine := make([]uint8, len(pairs))
	for k, i := range pairs {
		mine[k] = mergeable(&g.nodes[i], &g.nodes[i+1])
	}
	agreed, err := c.agreeMerges(ctx, mine)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if err := c.usable("Graph"); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	nodes, merged := c.mergeScatterGathers(g.nodes, pairs, agreed)
	c.mu.Unlock()
	var breaks []bool
	if capBytes > 0 {
		if breaks, err = c.agreeBreaks(ctx, nodes); err != nil {
			return nil, err
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable("Graph"); err != nil {
		return nil, err
	}
	e := c.bucket(nodes, capBytes, breaks)
	e.nodesIn, e.merged = len(g.nodes), merged
	for i := range e.steps {
		if err := c.bind(&e.steps[i]); err != nil {
			return nil, err
		}
	}
	e.logPlan()
	return e, nil
}

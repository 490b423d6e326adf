package runtime

import (
	"context"
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// What every rank of a graph must agree on before Compile rewrites it,
// so that every rank makes the same collectives: the nodes and the
// fusion cap (one AllGather of a hash, a count and the cap, a second of
// the descriptors only when the hashes differ, to name the node); when
// the graph has a ReduceScatter followed by an AllGather, which of
// those pairs every rank may merge into an AllReduce (an AllGather of a
// byte per pair); and when it has AllReduces that could share a bucket,
// which of them read what an earlier one writes (an AllReduce of a byte
// per node). The last two depend on how each rank's buffers alias,
// which the descriptors leave out.

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

// agreeGraph gathers every rank's graph hash, node count, fusion cap and
// recording failure: a rank whose recording failed returns that failure
// and every other rank an error naming it; when the graphs differ it
// gathers the descriptors too, so that every rank names the same first
// differing node.
// graphSummary is what a rank brings to agreeGraph: its graph's hash,
// descriptors and fusion cap, or the failure that spoiled its recording.
type graphSummary struct {
	hash       uint64
	descs      []descriptor
	capBytes   int
	failed     error
	failedNode int
}

func (c *Comm) agreeGraph(ctx context.Context, g graphSummary) error {
	n := c.Size()
	hash, descs, capBytes := g.hash, g.descs, g.capBytes
	spoilt := uint64(0) // failedNode+1 when failed
	if g.failed != nil {
		spoilt = uint64(g.failedNode) + 1
	}
	mine := []uint64{hash, uint64(len(descs)), uint64(capBytes), spoilt}
	all := make([]uint64, len(mine)*n)
	if err := AllGather(ctx, c, mine, all); err != nil {
		return err
	}
	if g.failed != nil {
		return g.failed
	}
	for r := range n {
		if node := all[r*len(mine)+3]; node != 0 {
			return &OpError{Op: "Graph", Rank: c.job.Rank, Peer: r, Step: -1,
				Err: fmt.Errorf("%w: rank %d's recording of graph node %d failed (its Compile says why)", ErrInvalidArgument, r, node-1)}
		}
	}
	same, longest := true, 0
	for r := range n {
		theirs := all[r*len(mine):][:len(mine)]
		same = same && theirs[0] == hash && theirs[1] == uint64(len(descs))
		longest = max(longest, int(theirs[1]))
		if theirs[2] != mine[2] {
			return &OpError{Op: "Graph", Rank: c.job.Rank, Peer: r, Step: -1,
				Err: fmt.Errorf("%w: this rank fuses AllReduces up to %d bytes, rank %d up to %d (Graph.FuseBytes, HCCL_GRAPH_FUSE_BYTES)",
					ErrMismatch, capBytes, r, int(theirs[2]))}
		}
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

// agreeMerges returns, for each pair of nodes (i, i+1) that is a
// ReduceScatter followed by an AllGather of its count and dtype, whether
// every rank may merge it, and as what: mine[k] is this rank's answer
// for the k-th such pair (0: no; else mergeInPlace or mergeOutOfPlace),
// and a pair is merged where every rank gave the same answer. It makes
// no call when the graph has no such pair, which every rank knows alike.
func (c *Comm) agreeMerges(ctx context.Context, mine []uint8) ([]bool, error) {
	if len(mine) == 0 {
		return nil, nil
	}
	all := make([]uint8, len(mine)*c.Size())
	if err := AllGather(ctx, c, mine, all); err != nil {
		return nil, err
	}
	ok := make([]bool, len(mine))
	for k, v := range mine {
		ok[k] = v != 0
		for r := range c.Size() {
			ok[k] = ok[k] && all[r*len(mine)+k] == v
		}
	}
	return ok, nil
}

// agreeBreaks returns, for each node, whether a bucket must end before
// it on every rank: it reads what an earlier node that could share its
// bucket writes, on some rank. It makes no call when no two nodes could
// share a bucket, which every rank knows alike.
func (c *Comm) agreeBreaks(ctx context.Context, nodes []graphNode) ([]bool, error) {
	flags := make([]uint8, len(nodes))
	shared := false
	for lo := 0; lo < len(nodes); {
		hi := lo + 1
		for hi < len(nodes) && fusible(&nodes[lo].a) && fusible(&nodes[hi].a) && sameKind(&nodes[lo].a, &nodes[hi].a) {
			hi++
		}
		for j := lo + 1; j < hi; j++ {
			shared = true
			if readsWritten(&nodes[j], nodes[lo:j]) {
				flags[j] = 1
			}
		}
		lo = hi
	}
	if !shared {
		return nil, nil
	}
	if err := AllReduce(ctx, c, flags, flags, Max); err != nil {
		return nil, err
	}
	breaks := make([]bool, len(nodes))
	for j, f := range flags {
		breaks[j] = f != 0
	}
	return breaks, nil
}

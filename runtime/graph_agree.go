package runtime

import (
	"context"
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// What every rank of a graph must agree on before Compile rewrites it:
// the nodes (one AllGather of a hash, a second of the descriptors only
// when the hashes differ, to name the node), and, when the graph has a
// ReduceScatter followed by an AllGather, which of those pairs every
// rank may merge into an AllReduce (a third, of a byte per pair): the
// merge depends on how the rank's buffers alias, which the descriptors
// leave out.

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

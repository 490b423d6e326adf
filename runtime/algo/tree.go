package algo

// Tree: binomial trees rooted at the call's root, for Broadcast and Reduce.
// ceil(log2 n) latencies instead of the chain's n-1: the choice for small
// messages.
//
// Ranks are renumbered relative to the root, v = (rank - root) mod n. In
// round k (k = 0, 1, ...) every v < 2^k that has the data sends it to
// v + 2^k. Broadcast, 4 ranks, root 0:
//
//	round  sends
//	0      0 -> 1
//	1      0 -> 2, 1 -> 3
//
// so v receives once, from v - 2^floor(log2 v), then sends to v + 2^k for
// every later round k with v + 2^k < n. Its first child has the largest
// subtree, so sending in that order finishes the deepest branch first. Every
// send is its own step: a rank's children are served one after another, at
// full bandwidth each.
//
// Reduce runs the same tree backwards: v receives from its children in the
// reverse order (the smallest subtree finishes first), reducing each into
// an accumulator, then sends the accumulator to its parent. For 4 ranks,
// root 0: 3 -> 1 and 2 -> 0 in the first round, 1 -> 0 in the second. The
// accumulator is the receive buffer on the root and scratch elsewhere, so a
// non-root rank needs no receive buffer at all; a leaf sends straight from
// its send buffer. The first child's data is combined with the send buffer
// (RecvReduce source = send), later ones with the accumulator.

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Tree builds binomial-tree Broadcast and Reduce plans for any root.
type Tree struct{}

// Name implements plan.Algorithm.
func (Tree) Name() string { return "tree" }

// Colls implements Collectives.
func (Tree) Colls() []plan.Coll { return []plan.Coll{plan.Broadcast, plan.Reduce} }

// Build implements plan.Algorithm.
func (a Tree) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	b := newBuilder(req, a.Name())
	switch req.Coll {
	case plan.Broadcast:
		treeBroadcast(b, req)
	case plan.Reduce:
		treeReduce(b, req)
	default:
		return nil, fmt.Errorf("rank %d: tree: %s: %w", req.Rank, req.Coll, ErrUnsupported)
	}
	return b.plan(), nil
}

// binomial returns rank's parent (-1 for the root) and children in the
// order Broadcast serves them.
func binomial(n, root, rank int) (parent int, children []int) {
	v := mod(rank-root, n)
	first := 1
	parent = -1
	if v > 0 {
		hb := 1
		for hb*2 <= v {
			hb *= 2
		}
		parent = mod(v-hb+root, n)
		first = hb * 2
	}
	for m := first; v+m < n; m *= 2 {
		children = append(children, mod(v+m+root, n))
	}
	return parent, children
}

func treeBroadcast(b *builder, req plan.Request) {
	c := req.Count
	parent, children := binomial(req.Size, req.Root, req.Rank)
	src := recvBuf(0, c)
	var own *plan.Op // the root's copy into its receive buffer, with its first send
	if parent < 0 {
		src = sendBuf(0, c)
		if !req.InPlace {
			own = copyOp(src, recvBuf(0, c))
		}
		if len(children) == 0 {
			b.step(own)
		}
	} else {
		b.step(recv(parent, recvBuf(0, c)))
	}
	for k, ch := range children {
		if k == 0 {
			b.step(own, send(ch, src))
		} else {
			b.step(send(ch, src))
		}
	}
}

func treeReduce(b *builder, req plan.Request) {
	c := req.Count
	parent, children := binomial(req.Size, req.Root, req.Rank)
	acc := recvBuf(0, c)
	if parent >= 0 {
		acc = scratchBuf(0, c)
		if len(children) > 0 {
			b.scratch(c)
		}
	} else if len(children) == 0 && !req.InPlace {
		b.step(copyOp(sendBuf(0, c), acc))
	}
	have := sendBuf(0, c) // where this rank's partial result is
	for k := len(children) - 1; k >= 0; k-- {
		b.step(recvReduce(children[k], have, acc))
		have = acc
	}
	if parent >= 0 {
		b.step(send(parent, have))
	}
}

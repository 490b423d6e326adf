package runtime

import (
	"context"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// Send sends buf to peer, which must call Recv with a buffer of the same
// length and type. Messages between two ranks arrive in the order sent.
func Send[T Element](ctx context.Context, c *Comm, buf []T, peer int) error {
	return c.p2p(ctx, plan.OpSend, peer, len(buf), asBytes(buf), dtypeOf[T]())
}

// Recv receives from peer into buf, whose length must match the Send.
func Recv[T Element](ctx context.Context, c *Comm, buf []T, peer int) error {
	return c.p2p(ctx, plan.OpRecv, peer, len(buf), asBytes(buf), dtypeOf[T]())
}

func (c *Comm) p2p(ctx context.Context, kind plan.Kind, peer, count int, buf []byte, dt reduce.DType) error {
	if peer < 0 || peer >= c.Size() || peer == c.Rank() {
		return c.invalid(plan.SendRecv, "peer %d is not another rank of %d", peer, c.Size())
	}
	region := plan.Region{Buf: plan.BufRecv, Len: count}
	op := plan.Op{Kind: kind, Peer: peer, Dst: region}
	if kind == plan.OpSend {
		op.Src, op.Dst = plan.Region{Buf: plan.BufSend, Len: count}, plan.Region{}
	}
	p := &plan.Plan{Coll: plan.SendRecv, Algo: "p2p", Rank: c.Rank(), Size: c.Size(), Steps: []plan.Step{{Ops: []plan.Op{op}}}}

	c.mu.Lock()
	// Each direction of each pair counts its messages, which both ends
	// therefore agree on: the k-th Send to j pairs with j's k-th Recv.
	dirKey := peer
	if kind == plan.OpRecv {
		dirKey = -1 - peer
	}
	c.p2pSeq[dirKey]++
	seq := c.p2pSeq[dirKey]
	c.mu.Unlock()

	return c.run(ctx, &call{
		req:   plan.Request{Coll: plan.SendRecv, Count: count},
		dtype: dt, send: buf, recv: buf,
		p2pPlan: p, p2pSeq: seq,
	})
}

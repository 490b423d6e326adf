package executor

import (
	"context"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// A plan whose first step is one small send and one small receive with the
// same peer (and local ops), and whose other steps are local, is a whole
// one-shot AllReduce at np 2, and a Barrier, Broadcast, Reduce, AllGather
// or ReduceScatter of a few bytes there. Over shared memory its exchange
// takes a few hundred nanoseconds, and the general step's work around it
// (a task per op, the passes that send inline, hand out and wait, the link
// lookups and interface checks per op, transfer ordinals) was as long
// again. pairStep runs such a first step straight: the send into the
// link's buffer, then the local ops, then the receive, on the calling
// goroutine, with the general path's checks (the regions within their
// buffers, the frame's header against the expected one). It takes about
// a third off an 8-byte AllReduce at np 2
// (docs/measurements.md#one-small-exchange-straight).

// pairMax is the largest transfer pairStep runs: small enough that a send
// never qualifies to be posted in place (shmlink posts from 256 KiB), and
// that the step's fixed costs still count.
const pairMax = 4 << 10

// pairPlan says whether the plan run last is a pair plan (pairStep), with
// its ops, and keeps what pairStep needs from call to call without
// allocating: headers handed to a link through an interface escape from
// the stack, and the receive's task keeps its reducer's function value.
type pairPlan struct {
	plan       *plan.Plan
	send, recv *plan.Op // nil when plan is not a pair plan
	out        wire.Header
	recvTask   task // the receive, for the general path's payload
	maxBytes   int  // pairMax, or less when the segment is smaller
	localMax   int  // the most elements a local op of the plan moves
}

// of reports whether p is a pair plan for rank, looking at its steps only
// when p is not the plan it looked at last.
func (pp *pairPlan) of(p *plan.Plan, rank int) bool {
	if pp.plan == p {
		return pp.send != nil
	}
	pp.plan, pp.send, pp.recv, pp.localMax = p, nil, nil, 0
	if len(p.Steps) == 0 {
		return false
	}
	for i := 1; i < len(p.Steps); i++ {
		if !localOnly(&p.Steps[i]) {
			return false
		}
		for j := range p.Steps[i].Ops {
			pp.localMax = max(pp.localMax, p.Steps[i].Ops[j].Dst.Len)
		}
	}
	var so, ro *plan.Op
	for i := range p.Steps[0].Ops {
		op := &p.Steps[0].Ops[i]
		switch op.Kind {
		case plan.OpCopy, plan.OpReduce:
			pp.localMax = max(pp.localMax, op.Dst.Len)
		case plan.OpSend:
			if so != nil {
				return false
			}
			so = op
		case plan.OpRecv, plan.OpRecvReduce:
			if ro != nil {
				return false
			}
			ro = op
		default:
			return false
		}
	}
	if so == nil || ro == nil || so.Peer != ro.Peer || so.Peer == rank || so.Peer < 0 {
		return false
	}
	pp.send, pp.recv = so, ro
	return true
}

// pairStep runs the first step of a pair plan if its transfers are at
// most pp.maxBytes and the link takes sends without waiting
// (transport.TrySender) and does not start them (transport.AsyncSender:
// TCP, whose general path writes the send while it waits). It reports
// whether it ran the step; if not, it did nothing. The step's transfers
// are the call's first on their link, ordinal 0, and the plan's later
// steps take none: the executor's ordinals stay untouched.
func (r *run) pairStep(ctx context.Context, pp *pairPlan) (bool, error) {
	so, ro := pp.send, pp.recv
	src, err := r.region(so.Src)
	if err != nil || len(src) > pp.maxBytes {
		return false, nil // the general path reports a bad region
	}
	dst, err := r.region(ro.Dst)
	if err != nil || len(dst) > pp.maxBytes {
		return false, nil
	}
	var acc []byte // the receive's other input
	if ro.Kind == plan.OpRecvReduce {
		if acc, err = r.region(ro.Src); err != nil || len(acc) != len(dst) || r.call.Kernel == nil {
			return false, nil
		}
	}
	peer := so.Peer
	link := r.e.links.Open(peer)
	ts, ok := link.(transport.TrySender)
	if !ok {
		return false, nil
	}
	if _, ok := link.(transport.AsyncSender); ok {
		return false, nil
	}

	step := &pp.plan.Steps[0]
	start := r.clock
	pp.out = r.header(0, 0, len(src))
	sent, err := ts.TrySend(ctx, &pp.out, src)
	if err != nil || !sent {
		// A failed send is reported by the general path, which meets
		// the error again; a full buffer means the send must wait, on
		// a worker, while this goroutine receives.
		r.call.TraceWhole = false
		return true, r.step(ctx, 0, step)
	}
	if len(step.Ops) > 2 {
		// The step's local ops (an AllGather's own block) touch other
		// regions than its transfers: run them while the peer reads.
		if err := r.localOps(0, step); err != nil {
			return true, err
		}
	}
	rt := &pp.recvTask
	rt.op, rt.dst, rt.src = ro, dst, acc
	want := r.header(0, 0, len(dst))
	want.Src = uint32(peer)
	r.waiting(0, peer)
	err = link.RecvHeader(ctx, &rt.recvHdr)
	switch {
	case err != nil:
	case rt.recvHdr != want:
		err = &MismatchError{Rank: r.e.rank, Peer: peer, Want: want, Got: rt.recvHdr}
	default:
		visitor, _ := link.(transport.PayloadVisitor)
		err = r.payload(ctx, rt, link, visitor, 0, len(dst))
	}
	if err != nil {
		return true, r.failed(ro, 0, err)
	}
	if r.e.trace != nil {
		r.tracePair(pp, src, start)
	}
	return true, nil
}

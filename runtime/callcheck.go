package runtime

import (
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Every frame carries the call's descriptor, so a rank that receives from
// a peer in another call (or the same call with other arguments) fails with
// ErrMismatch instead of mixing them up. That only works if ranks that
// disagree receive something from each other. Two kinds of plan do not
// guarantee it:
//
//   - rooted collectives (Broadcast, Reduce): two ranks that each believe
//     they are the root of a Broadcast only send (and would return with
//     wrong data), and of a Reduce only receive (and would wait for ever);
//   - plans without any transfer (count 0): a rank would return at once
//     while a peer that was given another count waits for it.
//
// needsCallCheck tells, from what all agreeing ranks agree on, whether a
// plan gets withCallCheck's exchange.
func needsCallCheck(p *plan.Plan) bool {
	if p.Size < 2 {
		return false
	}
	if p.Coll == plan.Broadcast || p.Coll == plan.Reduce {
		return true
	}
	for _, s := range p.Steps {
		for _, o := range s.Ops {
			if o.Kind == plan.OpSend || o.Kind == plan.OpRecv || o.Kind == plan.OpRecvReduce {
				return false
			}
		}
	}
	return true
}

// withCallCheck prepends an exchange of empty frames around the ring of
// ranks: every rank sends one to rank+1 and receives one from rank-1, so
// any disagreement on the call shows in the first step. It costs one small
// message per rank, sent before the data moves.
func withCallCheck(p *plan.Plan) *plan.Plan {
	n, r := p.Size, p.Rank
	check := plan.Step{Ops: []plan.Op{
		{Kind: plan.OpSend, Peer: (r + 1) % n},
		{Kind: plan.OpRecv, Peer: (r - 1 + n) % n},
	}}
	q := *p
	q.Steps = append([]plan.Step{check}, p.Steps...)
	return &q
}

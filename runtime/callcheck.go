package runtime

import (
	"slices"

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

// withCallCheck adds an exchange of empty frames around the ring of ranks:
// every rank sends one to rank+1 and receives one from rank-1, so some rank
// fails the call wherever there is a disagreement on it: among ranks that
// disagree on it, two neighbours in the ring do. It is not a barrier: a
// rank whose peers in the call (its ring neighbours among them) all agree
// with it may return, and it fails in a later call, on the disagreeing
// rank's frames still waiting in its links or on the job's abort (never
// with another rank's data: it received only from ranks that agreed). A
// guarantee that no rank returns would cost a dissemination's log2(n)
// rounds in every rooted call. The frames travel in the plan's first
// step when they can, not in a step of their own, which cost a
// Broadcast's root a round trip before its data could leave
// (docs/measurements.md#the-call-check-in-the-first-step).
//
// Where a frame goes is decided per pair, from both ranks' plans (planOf
// builds another rank's plan of the same call), so that sender and
// receiver decide alike (checkPlace). A step never holds two transfers
// between the same pair (the executor would not keep their order).
func withCallCheck(p *plan.Plan, planOf func(rank int) (*plan.Plan, error)) (*plan.Plan, error) {
	n, r := p.Size, p.Rank
	next, prev := (r+1)%n, (r-1+n)%n
	pn, err := planOf(next)
	if err != nil {
		return nil, err
	}
	pp := pn // at np 2 the two neighbours are one rank
	if prev != next {
		if pp, err = planOf(prev); err != nil {
			return nil, err
		}
	}
	var pre, first []plan.Op
	if len(p.Steps) > 0 {
		first = append(first, p.Steps[0].Ops...)
	}
	for _, c := range []struct {
		place checkPlace
		op    plan.Op
	}{
		{placeCheck(p, pn, r, next), plan.Op{Kind: plan.OpSend, Peer: next}},
		{placeCheck(pp, p, prev, r), plan.Op{Kind: plan.OpRecv, Peer: prev}},
	} {
		switch c.place {
		case checkInFirst:
			first = append(first, c.op)
		case checkBefore:
			pre = append(pre, c.op)
		}
	}
	q := *p
	q.Steps = nil
	if len(pre) > 0 {
		q.Steps = append(q.Steps, plan.Step{Ops: pre})
	}
	q.Steps = append(q.Steps, plan.Step{Ops: first})
	if len(p.Steps) > 1 {
		q.Steps = append(q.Steps, p.Steps[1:]...)
	}
	return &q, nil
}

// checkPlace is where the check frame of one pair goes.
type checkPlace uint8

const (
	// checkCovered: the first steps of both already carry a transfer
	// from the sender to the receiver, whose frame is checked anyway.
	checkCovered checkPlace = iota
	// checkInFirst: neither first step has a transfer between them in
	// that direction: the frame joins both first steps.
	checkInFirst
	// checkBefore: only one side's first step has one (their transfer
	// comes in different steps): the frame goes in a step before.
	checkBefore
)

// placeCheck says where the check frame from rank a (plan pa) to rank b
// (plan pb) goes; both ranks compute the same answer.
func placeCheck(pa, pb *plan.Plan, a, b int) checkPlace {
	sends := firstStepHas(pa, b, plan.OpSend)
	recvs := firstStepHas(pb, a, plan.OpRecv, plan.OpRecvReduce)
	switch {
	case sends && recvs:
		return checkCovered
	case !sends && !recvs:
		return checkInFirst
	}
	return checkBefore
}

// firstStepHas reports whether p's first step has an op of one of kinds
// with peer.
func firstStepHas(p *plan.Plan, peer int, kinds ...plan.Kind) bool {
	if len(p.Steps) == 0 {
		return false
	}
	for _, o := range p.Steps[0].Ops {
		if o.Peer == peer && slices.Contains(kinds, o.Kind) {
			return true
		}
	}
	return false
}

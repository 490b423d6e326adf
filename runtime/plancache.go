package runtime

import (
	"slices"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// planCache keeps the plans a communicator has built, so that a training
// loop that repeats the same calls plans each one once (a loop of one call
// does not even look here: repeat.go). AlltoAllV plans depend on per-peer
// counts and are rebuilt unless the counts repeat the last ones. Plans
// also depend on the server layout, which is the communicator's and never
// changes: the keys leave it out.
type planCache struct {
	plans map[planKey]*plan.Plan
	// last AlltoAllV plan and the counts it was built for
	vKey  planKey
	vReq  plan.Request
	vPlan *plan.Plan
}

type planKey struct {
	algo    string
	coll    plan.Coll
	count   int
	root    int
	inPlace bool
}

// maxCachedPlans bounds the cache; a program that calls with ever new
// sizes must not grow memory without end.
const maxCachedPlans = 4096

func (pc *planCache) get(alg plan.Algorithm, req *plan.Request) (*plan.Plan, error) {
	key := planKey{algo: alg.Name(), coll: req.Coll, count: req.Count, root: req.Root, inPlace: req.InPlace}
	if req.Coll == plan.AlltoAllV {
		if pc.vPlan != nil && pc.vKey == key && sameVCounts(&pc.vReq, req) {
			return pc.vPlan, nil
		}
		p, err := alg.Build(*req)
		if err != nil {
			return nil, err
		}
		pc.vKey, pc.vPlan = key, p
		pc.vReq = plan.Request{
			SendCounts: append([]int(nil), req.SendCounts...),
			SendDispls: append([]int(nil), req.SendDispls...),
			RecvCounts: append([]int(nil), req.RecvCounts...),
			RecvDispls: append([]int(nil), req.RecvDispls...),
		}
		return p, nil
	}
	if p, ok := pc.plans[key]; ok {
		return p, nil
	}
	p, err := alg.Build(*req)
	if err != nil {
		return nil, err
	}
	if needsCallCheck(p) {
		planOf := func(rank int) (*plan.Plan, error) {
			other := *req
			other.Rank = rank
			return alg.Build(other)
		}
		if p, err = withCallCheck(p, planOf); err != nil {
			return nil, err
		}
	}
	if pc.plans == nil || len(pc.plans) >= maxCachedPlans {
		pc.plans = make(map[planKey]*plan.Plan)
	}
	pc.plans[key] = p
	return p, nil
}

func sameVCounts(a, b *plan.Request) bool {
	return slices.Equal(a.SendCounts, b.SendCounts) && slices.Equal(a.SendDispls, b.SendDispls) &&
		slices.Equal(a.RecvCounts, b.RecvCounts) && slices.Equal(a.RecvDispls, b.RecvDispls)
}

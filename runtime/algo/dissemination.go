package algo

// Dissemination barrier: ceil(log2 n) rounds; in round k every rank sends an
// empty message to rank+2^k and waits for one from rank-2^k. After round k
// a rank has heard, directly or through others, from the 2^(k+1)-1 ranks
// to its left, so after the last round from everyone. 4 ranks:
//
//	round 0: 0->1 1->2 2->3 3->0
//	round 1: 0->2 1->3 2->0 3->1
//
// Unlike a tree barrier there is no root and no release phase: every rank
// finishes after exactly ceil(log2 n) latencies.

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Dissemination builds dissemination Barrier plans.
type Dissemination struct{}

// Name implements plan.Algorithm.
func (Dissemination) Name() string { return "dissemination" }

// Colls implements Collectives.
func (Dissemination) Colls() []plan.Coll { return []plan.Coll{plan.Barrier} }

// Build implements plan.Algorithm.
func (a Dissemination) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	if req.Coll != plan.Barrier {
		return nil, fmt.Errorf("rank %d: dissemination: %s: %w", req.Rank, req.Coll, ErrUnsupported)
	}
	b := newBuilder(req, a.Name())
	n, r := req.Size, req.Rank
	for d := 1; d < n; d *= 2 {
		b.step(send0(mod(r+d, n), plan.Region{}), recv0(mod(r-d, n), plan.Region{}))
	}
	return b.plan(), nil
}

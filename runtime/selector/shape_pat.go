package selector

import (
	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

func init() { registerCost(algo.PAT{}, patCost) }

// patCost counts PAT's rounds (algo.PATRounds): each sends k chunks, k
// growing for AllGather and shrinking for ReduceScatter.
func patCost(s *shape, k costCall) error {
	c := k.chunk
	ks := algo.PATRounds(k.n)
	for i := range ks {
		r := float64(ks[i])
		if k.coll == plan.ReduceScatter {
			r = float64(ks[len(ks)-1-i])
			s.reduce += r * c
		}
		s.round(k.flat, r*c)
	}
	s.copy = k.size + c
	return nil
}

package selector

import "github.com/hcclrun/hcclrun/runtime/algo"

func init() { registerCost(algo.Dissemination{}, disseminationCost) }

// disseminationCost counts a dissemination Barrier: ceil(log2 n) rounds
// of an empty message.
func disseminationCost(s *shape, k costCall) error {
	for d := 1; d < k.n; d *= 2 {
		s.round(k.flat, 0)
	}
	return nil
}

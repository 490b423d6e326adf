package selector

import "github.com/hcclrun/hcclrun/runtime/algo"

func init() { registerCost(algo.Pairwise{}, pairwiseCost) }

// pairwiseCost counts a pairwise AlltoAll: rounds of up to
// algo.MaxPeersInFlight peers at once, one block to and from each.
func pairwiseCost(s *shape, k costCall) error {
	n, c, f := k.n, k.chunk, k.flat
	for i := 0; i < n-1; i += algo.MaxPeersInFlight {
		peers := min(algo.MaxPeersInFlight, n-1-i)
		s.round(f, float64(peers)*c)
		s.msgs += float64(2*peers - 1)
		s.handoffs += float64(peers - 1)
		s.maxOp = c
	}
	s.heads = s.lat[Shm] * min(c, frameHead)
	s.copy = c
	return nil
}

package selector

import (
	"fmt"
	"math"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

func init() { registerCost(algo.PAT{}, patCost) }

// patCost counts PAT's rounds (algo.PATRounds): each sends k chunks, k
// growing for AllGather and shrinking for ReduceScatter. Under a scratch
// bound (Model.Scratch) the blocks go in pieces, pipelined one step
// (AllGather) or two (ReduceScatter) behind each other: the bytes stay,
// and each piece beyond the first adds that many dependent steps and a
// message per round. The bound is counted in elements of 8 bytes, the
// largest: the call's element size is not part of it, and so PAT is
// never chosen for a call whose plan it would then refuse (a call of
// smaller elements may be priced more pieces than it gets).
func patCost(s *shape, k costCall) error {
	c := k.chunk
	ks := algo.PATRounds(k.n)
	if k.scratch > 0 {
		const elem = 8
		pieces, err := algo.PATPieces(k.n, int(math.Ceil(c/elem)), int(k.scratch/elem), k.coll == plan.ReduceScatter)
		if err != nil {
			return fmt.Errorf("%w (HCCL_BUFFSIZE bounds its scratch to %s)", err, FormatBytes(k.scratch))
		}
		if extra := float64(pieces - 1); extra > 0 {
			behind := 1.0
			if k.coll == plan.ReduceScatter {
				behind = 2
			}
			s.lat[k.flat] += behind * extra
			s.msgs += extra * float64(len(ks))
		}
	}
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

package selector

import (
	"math/bits"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

func init() { registerCost(algo.RHD{}, rhdCost) }

// rhdCost counts recursive halving and doubling over the largest power
// of two p of ranks, the others folded into it first (and unfolded
// after): log2 p exchange rounds each way, of halving sizes.
func rhdCost(s *shape, k costCall) error {
	n, S, c, f, t := k.n, k.size, k.chunk, k.flat, k.topo
	p := 1 << (bits.Len(uint(n)) - 1)
	extra := n - p
	pf := float64(p)
	// Folding renumbers the ranks, so the XOR partners of virtual
	// ranks no longer line up with servers.
	class := func(m int) Class {
		if extra > 0 {
			return f
		}
		return aligned(t, m)
	}
	exchange := func(c Class, bytes float64) {
		s.round(c, bytes)
		if c == Shm {
			s.exchBytes += bytes
		}
	}
	half := func(reduce bool) {
		for m := p / 2; m >= 1; m /= 2 {
			exchange(class(m), float64(m)*S/pf)
			if reduce {
				s.reduce += float64(m) * S / pf
			}
		}
	}
	double := func() {
		for m := 1; m < p; m *= 2 {
			exchange(class(m), float64(m)*S/pf)
		}
	}
	fold := aligned(t, 1)
	// The fold's rounds are one-way: the even rank of a pair only
	// sends, the odd one only receives (and reduces, folding in).
	var folded float64
	foldRound := func(bytes float64, reduce bool) {
		if extra == 0 {
			return
		}
		s.round(fold, bytes)
		folded += bytes
		if reduce {
			s.reduce += bytes
			s.oneWayReduce(fold, bytes)
		}
	}
	switch k.coll {
	case plan.AllReduce:
		foldRound(S, true)
		half(true)
		double()
		foldRound(S, false)
	case plan.ReduceScatter:
		foldRound(S, true)
		half(true)
		foldRound(c, false)
		if extra > 0 {
			s.copy += c
		}
	case plan.AllGather:
		foldRound(c, false)
		double()
		foldRound(S, false)
		s.copy = c
	}
	if extra > 0 {
		var w atWork
		w.round(folded, 2*extra, n)
		w.round(s.bytes[Shm]+s.bytes[Net]-folded, p, n)
		s.busy = w.share()
	}
	return nil
}

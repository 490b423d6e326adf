package selector

import (
	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

func init() { registerCost(algo.Tree{}, treeCost) }

// treeCost counts a binomial tree: one round of the whole buffer per
// doubling, pairs at distance 1, 2, 4, ...
func treeCost(s *shape, k costCall) error {
	n, S, t, coll := k.n, k.size, k.topo, k.coll
	var w atWork
	for m := 1; m < n; m *= 2 {
		class := aligned(t, m)
		s.round(class, S)
		if coll == plan.Reduce {
			s.reduce += S
			s.oneWayReduce(class, S)
		}
		// The pairs at distance m: ranks m, 3m, 5m, ... below n
		// with the rank m below them.
		w.round(S, 2*((n+m-1)/(2*m)), n)
	}
	// A Broadcast's ranks that are not in a round still hold their
	// share of the cores: they wait to receive, and a receive over
	// shm polls through the yield window (100 us when ranks
	// outnumber cores, shmlink.Host.Wait) before it sleeps,
	// longer than a round of up to a few MiB, so they count as at
	// work. A Reduce's early ranks measure as asleep and count so
	// (docs/selector.md#how-the-shapes-count).
	if coll == plan.Reduce {
		s.busy = w.share()
	}
	if coll == plan.Broadcast {
		// The root sends its whole buffer from where it lies.
		s.fromSend = min(S, s.bytes[Shm])
	}
	return nil
}

package selector

import (
	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

func init() { registerCost(algo.Ring{}, ringCost) }

// ringCost counts a ring: n-1 rounds of a chunk each way round for the
// collectives that move every chunk once, twice that for AllReduce, and a
// pipeline of n pieces down a chain for the rooted ones.
func ringCost(s *shape, k costCall) error {
	n, nf, c, f := k.n, k.nf, k.chunk, k.flat
	switch coll := k.coll; coll {
	case plan.AllReduce:
		for range 2 * (n - 1) {
			s.round(f, c)
		}
		s.reduce = (nf - 1) * c
	case plan.AllGather, plan.ReduceScatter, plan.AlltoAll, plan.AlltoAllV:
		for range n - 1 {
			s.round(f, c)
		}
		if coll == plan.ReduceScatter {
			s.reduce = (nf - 1) * c
		} else {
			s.copy = c
		}
	case plan.Broadcast, plan.Reduce:
		// n pieces down a chain of n ranks: 2n-2 dependent steps of
		// one piece each. In every step but the first and the last
		// some rank relays: it receives one piece and forwards
		// another (ring.go), both on its own core. That is twice the
		// byte work of a step that only sends or only receives,
		// which is all the steps of tree and mesh, the other
		// Broadcast and Reduce algorithms: they are charged the
		// bytes a rank sends, like the exchanges of the other
		// collectives, where every rank does both in every step and
		// which the link's beta was fitted to. Without the relays
		// ring Broadcast was priced well below what it measured
		// (docs/selector.md#how-the-shapes-count). A Reduce relay's
		// receive is its reduction (oneWayReduce), so there only the
		// forward is extra.
		for i := 0; i < 2*n-2; i++ {
			s.round(f, c)
			relay := i > 0 && i < 2*n-3
			switch {
			case coll == plan.Broadcast && relay:
				s.bytes[f] += c // the relay's second copy
			case coll == plan.Reduce && !relay:
				s.oneWayReduce(f, c)
			}
		}
		if coll == plan.Reduce {
			s.reduce = (2*nf - 2) * c
		}
		if coll == plan.Broadcast {
			// The root's first piece leaves from its buffer, which
			// the others forward from theirs.
			s.fromSend = min(c, s.bytes[Shm])
		}
	case plan.Barrier:
		for range n - 1 {
			s.round(f, 0)
		}
	}
	return nil
}

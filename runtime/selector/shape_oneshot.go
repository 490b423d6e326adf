package selector

import "github.com/hcclrun/hcclrun/runtime/algo"

func init() { registerCost(algo.OneShot{}, oneShotCost) }

// oneShotCost counts a one-shot AllReduce: every rank sends its whole
// buffer to every peer in one round and reduces all of them locally.
func oneShotCost(s *shape, k costCall) error {
	if err := oneServer(algo.OneShot{}, k.topo); err != nil {
		return err
	}
	nf, S := k.nf, k.size
	peers := nf - 1
	if k.n == 2 {
		// Out of place the peer's input is reduced on arrival,
		// straight into recv: no copy, no local step. In place
		// it is reduced on arrival into scratch and copied to
		// recv in a step of its own. A Call does not say which,
		// and calibrations time both and take the median: half
		// the copy is in the price, and the step goes.
		s.round(Shm, S)
		s.reduce = S
		s.copy = S / 2
	} else {
		s.round(Shm, peers*S)
		s.reduce = peers * S
		s.copy = S
		s.local = nf
	}
	s.toEveryPeer(peers)
	return nil
}

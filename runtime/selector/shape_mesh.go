package selector

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

func init() { registerCost(algo.Mesh{}, meshCost) }

// meshCost counts a full mesh: every rank sends its share to every peer
// at once, in one round (two for AllReduce: reduce-scatter, then
// all-gather).
func meshCost(s *shape, k costCall) error {
	if err := oneServer(algo.Mesh{}, k.topo); err != nil {
		return err
	}
	nf, S, c := k.nf, k.size, k.chunk
	peers := nf - 1
	switch k.coll {
	case plan.AllReduce:
		s.round(Shm, peers*c)
		s.round(Shm, peers*c)
		s.reduce = peers * c
		s.local = nf - 2
	case plan.ReduceScatter:
		s.round(Shm, peers*c)
		s.reduce = peers * c
		s.local = nf - 2
	case plan.Reduce:
		s.round(Shm, peers*S) // the root receives from everyone
		s.reduce = peers * S
		s.oneWayReduce(Shm, peers*S)
		s.local = nf - 2
	case plan.Broadcast:
		s.round(Shm, peers*S) // the root sends to everyone
		// Through the rings the root copies every peer's share in
		// and each receiver its own out, mostly while the others
		// wait for the root (yielding, then asleep): about two
		// thirds of the ranks at work, not all; any share from 0.5
		// to 0.75 chooses alike. Posted, the receivers read the
		// root's memory while it waits, and all count
		// (docs/selector.md#how-the-shapes-count).
		s.ringsBusy = 2.0 / 3
	case plan.Barrier:
		s.round(Shm, 0)
	default: // AllGather, AlltoAll, AlltoAllV
		s.round(Shm, peers*c)
		s.copy = c
	}
	s.toEveryPeer(peers)
	if k.coll == plan.AllGather || k.coll == plan.Broadcast {
		s.fromSend = s.bytes[Shm] // every send leaves from the send buffer
	}
	return nil
}

// oneServer says why a, which reaches every peer over shm (mesh,
// one-shot), cannot serve a job on topology t.
func oneServer(a plan.Algorithm, t Topo) error {
	if t.servers() > 1 {
		return fmt.Errorf("%s runs within one server, the job spans %d servers", a.Name(), t.servers())
	}
	return nil
}

// toEveryPeer counts what the rounds of a full mesh cost beyond their
// bytes: every round posts a message to each peer, and each transfer is
// one peer's share of the round's bytes. A rank receives from every peer
// in each round, but for Broadcast, whose root only sends.
func (s *shape) toEveryPeer(peers float64) {
	s.msgs = s.lat[Shm] * peers
	if s.coll != plan.Broadcast {
		s.handoffs = s.lat[Shm] * (peers - 1)
	}
	s.maxOp = s.bytes[Shm] / max(s.lat[Shm], 1) / peers
	// A round's transfers run side by side: its head is one
	// transfer's.
	s.heads = s.lat[Shm] * min(s.maxOp, frameHead)
}

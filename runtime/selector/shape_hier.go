package selector

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

func init() { registerCost(algo.Hier{}, hierCost) }

// hierCost counts the hierarchical algorithms as the sum of their phases
// within a server (over shm) and across the servers' columns or leaders
// (one rank per server each). Servers of different sizes are priced by
// the largest, whose phases are the longest.
func hierCost(s *shape, k costCall) error {
	S, t := k.size, k.topo
	ks, sv := t.perServer(), t.servers()
	if sv < 2 || ks < 2 {
		return fmt.Errorf("hier needs two or more servers, one of two or more ranks (%s)", t)
	}
	// Phases run one after another: add their shapes. Within a
	// server the ranks talk over shm, between servers only columns
	// (leaders) talk, one rank per server each.
	intra, inter := Topo{Ranks: ks, Servers: 1}, Topo{Ranks: sv, Servers: sv}
	kf := float64(ks)
	var parts []shape
	add := func(name string, coll plan.Coll, t Topo, size float64) error {
		p, err := shapeOf(name, coll, t, int64(size))
		parts = append(parts, p)
		return err
	}
	var err error
	switch coll := k.coll; {
	case !t.even() && coll != plan.Broadcast && coll != plan.Reduce:
		err = hierLeaders(s, k, add)
	case coll == plan.AllReduce:
		// The ring reduce-scatter and all-gather phases of a
		// ring AllReduce within the server around an RHD AllReduce
		// of one chunk within the column.
		ring, _ := shapeOf("ring", plan.AllReduce, intra, int64(S))
		parts = append(parts, ring)
		err = add("rhd", plan.AllReduce, inter, S/kf)
	case coll == plan.AllGather:
		err = add("rhd", plan.AllGather, inter, S/kf)
		if err == nil {
			err = add("ring", plan.AllGather, intra, S)
		}
		s.copy += S
	case coll == plan.ReduceScatter:
		s.copy += S
		err = add("ring", plan.ReduceScatter, intra, S)
		if err == nil {
			err = add("rhd", plan.ReduceScatter, inter, S/kf)
		}
	case coll == plan.Broadcast:
		err = add("tree", coll, inter, S)
		if err == nil {
			err = add("tree", coll, intra, S)
		}
	case coll == plan.Reduce:
		err = add("tree", coll, intra, S)
		if err == nil {
			err = add("tree", coll, inter, S)
		}
	}
	if err != nil {
		return err
	}
	for _, p := range parts {
		for c := range s.lat {
			s.lat[c] += p.lat[c]
			s.bytes[c] += p.bytes[c]
		}
		s.reduce += p.reduce
		s.copy += p.copy
		s.local += p.local
		s.msgs += p.msgs
		s.handoffs += p.handoffs
		s.fused += p.fused
		s.heads += p.heads
		s.maxOp = max(s.maxOp, p.maxOp)
		// busy is not carried over: the parts run one after
		// another on every rank, priced as all at work.
	}
	return nil
}

// hierLeaders counts the leaders' design of servers of different sizes
// (algo/hier.go): a Reduce to each server's leader, the leaders' RHD
// collective, a Broadcast from the leader; AllGather and ReduceScatter
// gather to and scatter from the leader in one round of the largest
// server's blocks, and the leaders move bundles padded to that server's.
func hierLeaders(s *shape, k costCall, add func(string, plan.Coll, Topo, float64) error) error {
	t, S, c := k.topo, k.size, k.chunk
	ks, sv := t.perServer(), t.servers()
	intra, inter := Topo{Ranks: ks, Servers: 1}, Topo{Ranks: sv, Servers: sv}
	padded := float64(sv*ks) * c // the leaders' bundles, padding included
	others := float64(ks - 1)
	// oneToMany is the leader's round with every other rank of its
	// server: one message each, a hand-off for each receive beyond the
	// first when it receives.
	oneToMany := func(receives bool) {
		s.round(Shm, others*c)
		s.msgs += others - 1
		if receives {
			s.handoffs += others - 1
		}
	}
	switch k.coll {
	case plan.AllReduce:
		if err := add("tree", plan.Reduce, intra, S); err != nil {
			return err
		}
		if err := add("rhd", plan.AllReduce, inter, S); err != nil {
			return err
		}
		return add("tree", plan.Broadcast, intra, S)
	case plan.AllGather:
		oneToMany(true)
		s.copy += c + S // its own block in, every block out
		if err := add("rhd", plan.AllGather, inter, padded); err != nil {
			return err
		}
		return add("tree", plan.Broadcast, intra, S)
	case plan.ReduceScatter:
		if err := add("tree", plan.Reduce, intra, S); err != nil {
			return err
		}
		s.copy += S + c // into bundles, its own block out
		if err := add("rhd", plan.ReduceScatter, inter, padded); err != nil {
			return err
		}
		oneToMany(false)
		return nil
	}
	return fmt.Errorf("hier: no leaders' design for %s", k.coll)
}

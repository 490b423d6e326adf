package selector

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

func init() { registerCost(algo.Hier{}, hierCost) }

// hierCost counts the hierarchical algorithms as the sum of their phases
// within a server (over shm) and across the servers' columns (one rank
// per server each).
func hierCost(s *shape, k costCall) error {
	n, S, t := k.n, k.size, k.topo
	ks, sv := t.perServer(), t.servers()
	if sv < 2 || ks < 2 || n%sv != 0 {
		return fmt.Errorf("hier needs two or more servers of two or more ranks each, evenly (%d ranks on %d servers)", n, sv)
	}
	// Phases run one after another: add their shapes. Within a
	// server the ranks talk over shm, between servers only columns
	// talk, one rank per server each.
	intra, inter := Topo{Ranks: ks, Servers: 1}, Topo{Ranks: sv, Servers: sv}
	kf := float64(ks)
	var parts []shape
	add := func(name string, coll plan.Coll, t Topo, size float64) error {
		p, err := shapeOf(name, coll, t, int64(size))
		parts = append(parts, p)
		return err
	}
	var err error
	switch coll := k.coll; coll {
	case plan.AllReduce:
		// The ring reduce-scatter and all-gather phases of a
		// ring AllReduce within the server around an RHD AllReduce
		// of one chunk within the column.
		ring, _ := shapeOf("ring", plan.AllReduce, intra, int64(S))
		parts = append(parts, ring)
		err = add("rhd", plan.AllReduce, inter, S/kf)
	case plan.AllGather:
		err = add("rhd", plan.AllGather, inter, S/kf)
		if err == nil {
			err = add("ring", plan.AllGather, intra, S)
		}
		s.copy += S
	case plan.ReduceScatter:
		s.copy += S
		err = add("ring", plan.ReduceScatter, intra, S)
		if err == nil {
			err = add("rhd", plan.ReduceScatter, inter, S/kf)
		}
	case plan.Broadcast:
		err = add("tree", coll, inter, S)
		if err == nil {
			err = add("tree", coll, intra, S)
		}
	case plan.Reduce:
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

package runtime

import (
	"testing"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// TestCallCheckPlans runs every rank's plan of the calls that get a call
// check (Broadcast, Reduce, and calls that move nothing), as the plan
// cache builds them, through the simulator: the check frames must pair up
// (every receive with its send, in order per directed pair, never two
// transfers of one pair in a step) and the data must still arrive. It also
// holds the check's promise: every rank receives from rank-1 before it can
// finish.
func TestCallCheckPlans(t *testing.T) {
	calls := []struct {
		coll  plan.Coll
		count int
	}{
		{plan.Broadcast, 0}, {plan.Broadcast, 1}, {plan.Broadcast, 5}, {plan.Broadcast, 37},
		{plan.Reduce, 0}, {plan.Reduce, 1}, {plan.Reduce, 5}, {plan.Reduce, 37},
		{plan.AllReduce, 0}, {plan.AllGather, 0},
	}
	for _, a := range algo.All() {
		for _, c := range calls {
			if !algo.Serves(a, c.coll) || a.Name() == "hier" {
				continue
			}
			for n := 2; n <= 9; n++ {
				for _, root := range []int{0, n - 1, n / 2} {
					if c.coll != plan.Broadcast && c.coll != plan.Reduce && root != 0 {
						continue
					}
					plans := make([]*plan.Plan, n)
					ranks := make([]plan.SimRank, n)
					for r := range n {
						req := plan.Request{Coll: c.coll, Rank: r, Size: n, Count: c.count, Root: root}
						switch c.coll {
						case plan.Broadcast:
							req.InPlace = true // as the runtime asks for it: one buffer
						case plan.Reduce:
						default:
							req.Root = -1
						}
						var pc planCache
						p, err := pc.get(a, &req)
						if err != nil {
							t.Fatalf("%s %v n=%d rank %d: %v", a.Name(), c.coll, n, r, err)
						}
						plans[r] = p
						recvLen := c.count
						if c.coll == plan.AllGather {
							recvLen *= n
						}
						ranks[r] = plan.SimRank{Mem: make([]int64, c.count+recvLen), Send: plan.Window{Len: c.count}, Recv: plan.Window{Off: c.count, Len: recvLen}}
						if c.coll == plan.Broadcast {
							ranks[r] = plan.SimRank{Mem: make([]int64, c.count), Send: plan.Window{Len: c.count}, Recv: plan.Window{Len: c.count}}
						}
						if c.coll == plan.Reduce && r != root {
							ranks[r].Recv = plan.Window{Absent: true}
						}
						if !receivesFromPrev(p, (r-1+n)%n) {
							t.Errorf("%s %v count %d n=%d root %d: rank %d never receives from rank %d", a.Name(), c.coll, c.count, n, root, r, (r-1+n)%n)
						}
					}
					if _, err := plan.Simulate(plans, ranks, func(x, y int64) int64 { return x + y }); err != nil {
						t.Errorf("%s %v count %d n=%d root %d: %v", a.Name(), c.coll, c.count, n, root, err)
					}
				}
			}
		}
	}
}

// receivesFromPrev reports whether one of p's first two steps (the check's
// place, before or in the first step) receives from prev.
func receivesFromPrev(p *plan.Plan, prev int) bool {
	for _, s := range p.Steps[:min(2, len(p.Steps))] {
		for _, o := range s.Ops {
			if o.Peer == prev && (o.Kind == plan.OpRecv || o.Kind == plan.OpRecvReduce) {
				return true
			}
		}
	}
	return false
}

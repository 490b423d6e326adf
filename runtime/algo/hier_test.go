package algo

import (
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// crossServer returns, for the plans of n ranks with k per server, the most
// elements one rank sends to other servers and how many of the plan's
// transfers cross servers, summed over ranks.
func crossServer(t *testing.T, a plan.Algorithm, c simCase) (maxElems int, transfers int) {
	t.Helper()
	for r := 0; r < c.n; r++ {
		p, err := a.Build(c.request(r))
		if err != nil {
			t.Fatal(err)
		}
		elems := 0
		for _, st := range p.Steps {
			for _, o := range st.Ops {
				if o.Kind == plan.OpSend && o.Peer/c.perServer != r/c.perServer {
					elems += o.Src.Len
					transfers++
				}
			}
		}
		maxElems = max(maxElems, elems)
	}
	return maxElems, transfers
}

// TestHierCrossServerBytes shows what the hierarchy buys: the busiest rank
// sends at most 1/K of the cross-server bytes the busiest rank of a flat
// ring sends, for K ranks per server.
func TestHierCrossServerBytes(t *testing.T) {
	for _, tp := range [][2]int{{8, 4}, {16, 4}, {32, 8}, {64, 8}} {
		n, k := tp[0], tp[1]
		for _, coll := range []plan.Coll{plan.AllReduce, plan.AllGather, plan.ReduceScatter} {
			count := 64 * n
			if coll != plan.AllReduce {
				count = 64
			}
			c := simCase{coll: coll, n: n, count: count, perServer: k}
			flat, _ := crossServer(t, Ring{}, c)
			hier, _ := crossServer(t, Hier{}, c)
			if hier*k > flat {
				t.Errorf("%s n=%d k=%d: busiest rank sends %d elements across servers, flat ring %d: more than 1/%d", coll, n, k, hier, flat, k)
			}
			t.Logf("%s n=%d k=%d: cross-server elements of the busiest rank: ring %d, hier %d", coll, n, k, flat, hier)
		}
	}
}

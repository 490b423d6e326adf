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
				if o.Kind == plan.OpSend && c.servers.Server(o.Peer) != c.servers.Server(r) {
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
			c := simCase{coll: coll, n: n, count: count, servers: plan.EvenLayout(n, k)}
			flat, _ := crossServer(t, Ring{}, c)
			hier, _ := crossServer(t, Hier{}, c)
			if hier*k > flat {
				t.Errorf("%s n=%d k=%d: busiest rank sends %d elements across servers, flat ring %d: more than 1/%d", coll, n, k, hier, flat, k)
			}
			t.Logf("%s n=%d k=%d: cross-server elements of the busiest rank: ring %d, hier %d", coll, n, k, flat, hier)
		}
	}
}

// TestHierLeadersCrossServers: on servers of different sizes only the
// servers' leaders (their lowest ranks) send across servers, for the
// collectives the leaders' design serves, and for Broadcast and Reduce
// only one rank per server.
func TestHierLeadersCrossServers(t *testing.T) {
	layouts := []*plan.Layout{plan.SizesLayout(3, 2, 1), plan.SizesLayout(2, 1), plan.SizesLayout(1, 4, 2)}
	if l, err := plan.NewLayout([]int{0, 1, 2, 0, 1, 0}); err == nil {
		layouts = append(layouts, l)
	}
	for _, l := range layouts {
		for _, coll := range []plan.Coll{plan.AllReduce, plan.AllGather, plan.ReduceScatter, plan.Broadcast, plan.Reduce} {
			senders := map[int]map[int]bool{} // server -> ranks that send off it
			for r := 0; r < l.Ranks(); r++ {
				p, err := Hier{}.Build(plan.Request{Coll: coll, Rank: r, Size: l.Ranks(), Count: 10, Root: l.Ranks() - 1, Layout: l})
				if err != nil {
					t.Fatal(err)
				}
				for _, st := range p.Steps {
					for _, o := range st.Ops {
						if o.Kind == plan.OpSend && l.Server(o.Peer) != l.Server(r) {
							if senders[l.Server(r)] == nil {
								senders[l.Server(r)] = map[int]bool{}
							}
							senders[l.Server(r)][r] = true
						}
					}
				}
			}
			for g, rs := range senders {
				if len(rs) != 1 {
					t.Errorf("%s on %s: server %d sends across servers from ranks %v, want one", coll, l, g, rs)
				}
				if lead := l.Members(g)[0]; coll != plan.Broadcast && coll != plan.Reduce && !rs[lead] {
					t.Errorf("%s on %s: server %d sends across servers from %v, not its leader %d", coll, l, g, rs, lead)
				}
			}
		}
	}
}

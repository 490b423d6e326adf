package selector

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// simulate builds every rank's plan for the call of count elements (per
// rank share for AllGather, ReduceScatter, AlltoAll(V)) and runs it.
func simulate(a plan.Algorithm, coll plan.Coll, n int, layout *plan.Layout, count int) (*plan.SimResult, error) {
	plans := make([]*plan.Plan, n)
	ranks := make([]plan.SimRank, n)
	for r := 0; r < n; r++ {
		req := testRequest(coll, r, n, count)
		req.Layout = layout
		sendLen, recvLen := count, count
		switch coll {
		case plan.AllGather:
			recvLen = n * count
		case plan.ReduceScatter:
			sendLen = n * count
		case plan.AlltoAll, plan.AlltoAllV:
			sendLen, recvLen = n*count, n*count
		case plan.Barrier:
			sendLen, recvLen = 0, 0
		}
		p, err := a.Build(req)
		if err != nil {
			return nil, err
		}
		plans[r] = p
		ranks[r] = plan.SimRank{Mem: make([]int64, sendLen+recvLen), Send: plan.Window{Len: sendLen}, Recv: plan.Window{Off: sendLen, Len: recvLen}}
		if coll == plan.Reduce && r != 0 {
			ranks[r].Recv = plan.Window{Absent: true}
		}
	}
	return plan.Simulate(plans, ranks, func(a, b int64) int64 { return a + b })
}

// testRequest is rank r's request of coll on n ranks, count elements each
// (every block of an AlltoAllV, none for a Barrier).
func testRequest(coll plan.Coll, r, n, count int) plan.Request {
	req := plan.Request{Coll: coll, Rank: r, Size: n, Count: count}
	switch coll {
	case plan.Barrier:
		req.Count = 0
	case plan.AlltoAllV:
		req.Count = 0
		for p := 0; p < n; p++ {
			req.SendCounts = append(req.SendCounts, count)
			req.RecvCounts = append(req.RecvCounts, count)
			req.SendDispls = append(req.SendDispls, p*count)
			req.RecvDispls = append(req.RecvDispls, p*count)
		}
	}
	return req
}

// TestShapeMatchesPlans holds the cost formulas to the plans: the latencies
// the model charges are the simulator's dependent rounds, and for the
// algorithms whose busiest sender is on the critical path, the bytes it
// charges are what that rank really sends.
func TestShapeMatchesPlans(t *testing.T) {
	// bytesExact lists (algorithm, collective) pairs whose critical path
	// is the busiest sender's traffic; powersOnly restricts that to powers
	// of two (RHD folds add a receive the senders do not see).
	bytesExact := map[string]bool{
		"ring/AllReduce": true, "ring/AllGather": true, "ring/ReduceScatter": true,
		"ring/AlltoAll": true, "ring/AlltoAllV": true, "ring/Barrier": true,
		"tree/Broadcast": true, "dissemination/Barrier": true,
		"pairwise/AlltoAll": true, "pairwise/AlltoAllV": true,
		"mesh/AllReduce": true, "mesh/ReduceScatter": true, "mesh/AllGather": true,
		"mesh/Broadcast": true, "mesh/AlltoAll": true, "mesh/AlltoAllV": true, "mesh/Barrier": true,
		"oneshot/AllReduce": true, "pat/AllGather": true, "pat/ReduceScatter": true,
		"rhd/AllReduce": true, "rhd/ReduceScatter": true, "rhd/AllGather": true,
		"hier/AllReduce": true, "hier/ReduceScatter": true, "hier/AllGather": true,
	}
	powersOnly := map[string]bool{"rhd/AllReduce": true, "rhd/ReduceScatter": true, "rhd/AllGather": true,
		"hier/AllReduce": true, "hier/ReduceScatter": true, "hier/AllGather": true}
	const elem = 8
	for _, a := range algo.All() {
		for _, coll := range a.(algo.Collectives).Colls() {
			key := a.Name() + "/" + coll.String()
			topos := []Topo{{Ranks: 2, Servers: 1}, {Ranks: 3, Servers: 1}, {Ranks: 4, Servers: 1}, {Ranks: 5, Servers: 1}, {Ranks: 7, Servers: 1}, {Ranks: 8, Servers: 1}, {Ranks: 9, Servers: 1}, {Ranks: 16, Servers: 1}, {Ranks: 17, Servers: 1}}
			if a.Name() == "hier" {
				topos = []Topo{{Ranks: 4, Servers: 2}, {Ranks: 8, Servers: 2}, {Ranks: 8, Servers: 4}, {Ranks: 12, Servers: 4}, {Ranks: 12, Servers: 3}, {Ranks: 16, Servers: 4}, {Ranks: 24, Servers: 3}, {Ranks: 32, Servers: 4},
					{Ranks: 3, Servers: 2}, {Ranks: 6, Servers: 3, Largest: 3}, {Ranks: 6, Servers: 2, Largest: 4}, {Ranks: 16, Servers: 3, Largest: 8}, {Ranks: 11, Servers: 4}}
			}
			for _, topo := range topos {
				n := topo.Ranks
				layout := topoLayout(topo)
				// Counts divisible by n keep chunks equal, as the
				// formulas assume; at least n keeps every chunk busy.
				count := 4 * n
				res, err := simulate(a, coll, n, layout, count)
				if err != nil {
					t.Fatalf("%s n=%d: %v", key, n, err)
				}
				size := int64(count * elem)
				switch coll {
				case plan.AllGather, plan.ReduceScatter, plan.AlltoAll, plan.AlltoAllV:
					size *= int64(n)
				}
				s, err := shapeOf(a.Name(), coll, topo, size)
				if err != nil {
					t.Fatalf("%s n=%d: %v", key, n, err)
				}
				lat := s.lat[Shm] + s.lat[Net]
				if int(lat) != res.Rounds {
					t.Errorf("%s n=%d: model charges %v latencies, the plan has %d rounds", key, n, lat, res.Rounds)
				}
				pow2 := n&(n-1) == 0 && (topo.Servers&(topo.Servers-1)) == 0
				if bytesExact[key] && (pow2 || !powersOnly[key]) {
					got := float64(slices.Max(res.SentElems) * elem)
					if b := s.bytes[Shm] + s.bytes[Net]; b != got {
						t.Errorf("%s n=%d: model charges %v bytes, the busiest rank sends %v", key, n, b, got)
					}
				}
			}
		}
	}
}

// TestShapeClasses checks that work crossing servers is charged to the
// network class, and only that.
func TestShapeClasses(t *testing.T) {
	tests := []struct {
		name     string
		coll     plan.Coll
		topo     Topo
		shm, net float64 // latencies per class
	}{
		{"ring", plan.AllReduce, Topo{Ranks: 8, Servers: 1}, 14, 0},
		{"ring", plan.AllReduce, Topo{Ranks: 8, Servers: 2}, 0, 14},
		{"rhd", plan.AllReduce, Topo{Ranks: 16, Servers: 4}, 4, 4}, // masks 1,2 stay on a server of 4
		{"rhd", plan.AllReduce, Topo{Ranks: 12, Servers: 3}, 2, 6}, // folding pairs share a server, virtual ranks do not
		{"tree", plan.Broadcast, Topo{Ranks: 16, Servers: 2}, 3, 1},
		{"pat", plan.AllGather, Topo{Ranks: 64, Servers: 64}, 0, 6},
		{"hier", plan.AllReduce, Topo{Ranks: 64, Servers: 8}, 14, 6},
		{"hier", plan.Broadcast, Topo{Ranks: 64, Servers: 8}, 3, 3},
	}
	for _, tt := range tests {
		s, err := shapeOf(tt.name, tt.coll, tt.topo, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if s.lat[Shm] != tt.shm || s.lat[Net] != tt.net {
			t.Errorf("%s %s %+v: latencies shm %v net %v, want %v %v", tt.name, tt.coll, tt.topo, s.lat[Shm], s.lat[Net], tt.shm, tt.net)
		}
	}
	if _, err := shapeOf("mesh", plan.AllReduce, Topo{Ranks: 16, Servers: 2}, 1); err == nil {
		t.Error("mesh priced across servers")
	}
}

func ExampleTable() {
	p, _ := ParseAlgo("")
	fmt.Print(Predict(DefaultModel(), p, Call{Coll: plan.AllReduce, Bytes: 1 << 20, Topo: Topo{Ranks: 64, Servers: 8}}))
}

// TestShapeHandoffs holds the handoff count to the plans: for the busiest
// rank, the receives of each step beyond the first, summed over steps (the
// executor runs a step's first receive on the calling goroutine and hands
// each other one to a worker; sends go out inline).
func TestShapeHandoffs(t *testing.T) {
	for _, a := range algo.All() {
		if a.Name() == "hier" {
			continue // its phases are these algorithms at other sizes
		}
		for _, coll := range a.(algo.Collectives).Colls() {
			for _, n := range []int{2, 3, 4, 5, 8, 17, 40} {
				count := 4 * n
				var want float64
				for r := 0; r < n; r++ {
					p, err := a.Build(testRequest(coll, r, n, count))
					if err != nil {
						t.Fatalf("%s/%s n=%d rank %d: %v", a.Name(), coll, n, r, err)
					}
					var h float64
					for _, st := range p.Steps {
						recvs := 0
						for _, op := range st.Ops {
							if op.Kind == plan.OpRecv || op.Kind == plan.OpRecvReduce {
								recvs++
							}
						}
						h += float64(max(recvs-1, 0))
					}
					want = max(want, h)
				}
				size := int64(count * 8)
				switch coll {
				case plan.AllGather, plan.ReduceScatter, plan.AlltoAll, plan.AlltoAllV:
					size *= int64(n)
				}
				s, err := shapeOf(a.Name(), coll, Topo{Ranks: n, Servers: 1}, size)
				if err != nil {
					t.Fatalf("%s/%s n=%d: %v", a.Name(), coll, n, err)
				}
				if s.handoffs != want {
					t.Errorf("%s/%s n=%d: model charges %v handoffs, the busiest rank's plan has %v", a.Name(), coll, n, s.handoffs, want)
				}
			}
		}
	}
}

// TestShapeRelays holds the relay steps the model charges for ring
// Broadcast and Reduce to the plans: it places every rank's steps on
// rounds as early as their receives allow (a transfer takes the round of
// both its send and its receive) and counts the rounds in which some rank
// both receives and sends. Broadcast charges such a round a second piece;
// Reduce charges a transfer only in such rounds.
func TestShapeRelays(t *testing.T) {
	ring, _ := algo.Lookup("ring")
	for _, coll := range []plan.Coll{plan.Broadcast, plan.Reduce} {
		for n := 2; n <= 9; n++ {
			count := 4 * n
			plans := make([]*plan.Plan, n)
			for r := range plans {
				p, err := ring.Build(testRequest(coll, r, n, count))
				if err != nil {
					t.Fatal(err)
				}
				plans[r] = p
			}
			rounds, relays := relayRounds(t, plans)
			s, err := shapeOf("ring", coll, Topo{Ranks: n, Servers: 1}, int64(count*8))
			if err != nil {
				t.Fatal(err)
			}
			piece := float64(count * 8 / n)
			// Broadcast: every round's piece and the relays' second
			// one. Reduce: a round without a relay only receives and
			// reduces, which costs the reduction alone (oneWayReduce).
			want := piece * float64(rounds+relays)
			if coll == plan.Reduce {
				want = piece * float64(relays)
			}
			if got := s.bytes[Shm] - s.fused; got != want {
				t.Errorf("ring %s n=%d: model charges %v bytes; the plans have %d rounds of a %v-byte piece, %d with a relay: %v",
					coll, n, got, rounds, piece, relays, want)
			}
		}
	}
}

// relayRounds schedules plans round by round and returns how many rounds
// they take and in how many some rank receives and sends.
func relayRounds(t *testing.T, plans []*plan.Plan) (rounds, relays int) {
	t.Helper()
	n := len(plans)
	type pair struct{ from, to int }
	at := make([][]int, n) // at[r][i]: the round of rank r's step i
	for r, p := range plans {
		at[r] = make([]int, len(p.Steps))
	}
	// Rounds only grow; repeat until the k-th send from a to b and the
	// k-th receive at b from a sit in the same round.
	for changed := true; changed; {
		changed = false
		sends := map[pair][]int{}
		for r, p := range plans {
			for i, st := range p.Steps {
				for _, o := range st.Ops {
					if o.Kind == plan.OpSend {
						sends[pair{r, o.Peer}] = append(sends[pair{r, o.Peer}], at[r][i])
					}
				}
			}
		}
		for r, p := range plans {
			seen := map[int]int{}
			for i, st := range p.Steps {
				round := 0
				if i > 0 {
					round = at[r][i-1] + 1
				}
				for _, o := range st.Ops {
					if o.Kind == plan.OpRecv || o.Kind == plan.OpRecvReduce {
						k := seen[o.Peer]
						seen[o.Peer]++
						round = max(round, sends[pair{o.Peer, r}][k])
					}
				}
				if round > at[r][i] {
					at[r][i], changed = round, true
				}
			}
		}
	}
	relaying := map[int]bool{}
	for r, p := range plans {
		for i, st := range p.Steps {
			var in, out bool
			for _, o := range st.Ops {
				in = in || o.Kind == plan.OpRecv || o.Kind == plan.OpRecvReduce
				out = out || o.Kind == plan.OpSend
			}
			relaying[at[r][i]] = relaying[at[r][i]] || in && out
			rounds = max(rounds, at[r][i]+1)
		}
	}
	for _, yes := range relaying {
		if yes {
			relays++
		}
	}
	return rounds, relays
}

// TestOneWayReduceOverTCP: a Reduce round's transfer is hidden behind the
// reduction only over shm; with HCCL_SHM_DISABLE=1 the same shape keeps
// it, on the net class.
func TestOneWayReduceOverTCP(t *testing.T) {
	const size = 1 << 20
	for _, name := range []string{"tree", "ring", "mesh"} {
		s, err := shapeOf(name, plan.Reduce, Topo{Ranks: 2, Servers: 1}, size)
		if err != nil {
			t.Fatal(err)
		}
		m := DefaultModel()
		if f := m.terms(s, Topo{Ranks: 2, Servers: 1}, 1); f[fitShmBeta] != 0 {
			t.Errorf("%s Reduce at np 2 over shm: %v transfer bytes charged, want 0 (the receive is the reduction)", name, f[fitShmBeta])
		}
		m.NoShm = true
		if f := m.terms(s, Topo{Ranks: 2, Servers: 1}, 1); f[fitNetBeta] < size {
			t.Errorf("%s Reduce at np 2 over TCP: %v transfer bytes charged, want at least %d", name, f[fitNetBeta], size)
		}
	}
	// hier's Reduce within a server is a tree Reduce there: its rounds
	// are hidden alike.
	hier, err := shapeOf("hier", plan.Reduce, Topo{Ranks: 8, Servers: 2}, size)
	if err != nil {
		t.Fatal(err)
	}
	intra, _ := shapeOf("tree", plan.Reduce, Topo{Ranks: 4, Servers: 1}, size)
	if hier.fused != intra.fused || hier.fused == 0 {
		t.Errorf("hier Reduce on 2 servers of 4: %v bytes received as reduced, its tree within a server %v", hier.fused, intra.fused)
	}
}

// TestWaitingRanksLeaveCores: with more ranks than cores, byte work is
// slowed by the ranks at work, not by all of them (shape.busy). A tree
// Reduce's rounds at np 3 pair two ranks each and rhd at np 3 keeps two
// at work (the folded rank waits through the exchange, the third through
// the fold), so on 2 cores their byte work costs what it costs on 3; a
// tree Reduce at np 4 has all four at work in one round and two in the
// other, 1.5 times its price on 4 cores; a ring keeps every rank at work,
// and so does a tree Broadcast, whose waiting ranks poll.
func TestWaitingRanksLeaveCores(t *testing.T) {
	const size = 4 << 20
	for _, c := range []struct {
		algo  string
		coll  plan.Coll
		ranks int
		want  float64 // byte work on 2 cores over byte work on enough cores
	}{
		{"tree", plan.Reduce, 3, 1},
		{"tree", plan.Broadcast, 3, 1.5}, // its waiting ranks poll (shape.go)
		{"rhd", plan.AllReduce, 3, 1},
		{"rhd", plan.ReduceScatter, 3, 1},
		{"tree", plan.Reduce, 4, 1.5},
		{"tree", plan.Broadcast, 4, 2},
		{"rhd", plan.AllReduce, 4, 2},
		{"ring", plan.AllReduce, 3, 1.5},
		{"ring", plan.Reduce, 3, 1.5},
	} {
		topo := Topo{Ranks: c.ranks, Servers: 1}
		s, err := shapeOf(c.algo, c.coll, topo, size)
		if err != nil {
			t.Fatal(err)
		}
		m := DefaultModel()
		m.Exchange = 1 // its premium is TestExchangePremium's
		m.Cores = c.ranks
		enough := m.terms(s, topo, 1)
		m.Cores = 2
		two := m.terms(s, topo, 1)
		for _, k := range []int{fitShmBeta, fitGamma} {
			if enough[k] == 0 {
				continue
			}
			if got := two[k] / enough[k]; math.Abs(got-c.want) > 1e-9 {
				t.Errorf("%s %v at np %d: term %d on 2 cores is %.3f times its price on %d, want %.3f",
					c.algo, c.coll, c.ranks, k, got, c.ranks, c.want)
			}
		}
	}
}

// TestExchangePremium: the bytes of rhd's exchange rounds cost
// Model.Exchange times as much when the ranks at work outnumber the cores
// (np 4 on 2 cores), and no more with a core each (np 2) or when only two
// of three work (np 3, whose third rank waits through the exchange); a
// ring has no exchange rounds.
func TestExchangePremium(t *testing.T) {
	const size = 4 << 20
	for _, c := range []struct {
		algo  string
		ranks int
		want  float64 // the shm byte term with Exchange 1.5 over with 1
	}{
		{"rhd", 4, 1.5}, // every byte of an AllReduce at np 4 is exchanged
		{"rhd", 2, 1},
		{"rhd", 3, 1},
		{"ring", 4, 1},
	} {
		topo := Topo{Ranks: c.ranks, Servers: 1}
		s, err := shapeOf(c.algo, plan.AllReduce, topo, size)
		if err != nil {
			t.Fatal(err)
		}
		m := DefaultModel()
		m.Cores = 2
		m.Exchange = 1
		flat := m.terms(s, topo, 1)
		m.Exchange = 1.5
		dear := m.terms(s, topo, 1)
		if got := dear[fitShmBeta] / flat[fitShmBeta]; math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s AllReduce at np %d on 2 cores: shm bytes cost %.3f times as much with Exchange 1.5, want %.3f", c.algo, c.ranks, got, c.want)
		}
		if dear[fitWake] != flat[fitWake] {
			t.Errorf("%s AllReduce at np %d: Exchange moved the wake-ups (%v, %v)", c.algo, c.ranks, dear[fitWake], flat[fitWake])
		}
	}
}

// TestFrameHeads holds the head term (Model.Head) to its shape: one head
// of at most frameHead bytes per round over shm, charged only while every
// rank has a core, and what it is for: at np 2 the one-shot AllReduce of
// 32 KiB (one round) over ring's two rounds of 16 KiB, as measured on both
// hosts, while ring still wins from 128 KiB on.
func TestFrameHeads(t *testing.T) {
	for _, c := range []struct {
		algo  string
		coll  plan.Coll
		ranks int
		size  int64
		want  float64 // bytes of heads
	}{
		{"ring", plan.AllReduce, 2, 32 << 10, 2 * 16 << 10},
		{"ring", plan.AllReduce, 2, 8 << 10, 2 * 4 << 10},
		{"ring", plan.AllReduce, 4, 1 << 20, 6 * frameHead},
		{"oneshot", plan.AllReduce, 2, 1 << 20, frameHead},
		{"mesh", plan.AllGather, 4, 3 << 10, 768},          // a round of three 768-byte transfers side by side
		{"pairwise", plan.AlltoAll, 3, 3 << 20, frameHead}, // one round, both peers at once
		{"tree", plan.Broadcast, 4, 100, 2 * 100},
	} {
		s, err := shapeOf(c.algo, c.coll, Topo{Ranks: c.ranks, Servers: 1}, c.size)
		if err != nil {
			t.Fatal(err)
		}
		if s.heads != c.want {
			t.Errorf("%s %s of %d at np %d: %v bytes of heads, want %v", c.algo, c.coll, c.size, c.ranks, s.heads, c.want)
		}
	}

	m := DefaultModel()
	m.Cores = 2
	topo := Topo{Ranks: 4, Servers: 1}
	s, _ := shapeOf("ring", plan.AllReduce, topo, 1<<20)
	if f := m.terms(s, topo, 1); f[fitHead] != 0 {
		t.Errorf("np 4 on 2 cores: %v bytes of heads priced, want none (the wake-ups cover them)", f[fitHead])
	}
	topo = Topo{Ranks: 2, Servers: 1}
	s, _ = shapeOf("ring", plan.AllReduce, topo, 1<<20)
	if f := m.WithoutShm().terms(s, topo, 1); f[fitHead] != 0 {
		t.Errorf("np 2 over TCP: %v bytes of heads priced, want none", f[fitHead])
	}

	for _, c := range []struct {
		size int64
		want string
	}{{32 << 10, "oneshot"}, {128 << 10, "ring"}} {
		tab := Predict(m, Policy{}, Call{plan.AllReduce, c.size, topo})
		got, err := tab.Chosen()
		if err != nil {
			t.Fatal(err)
		}
		if got.Algo != c.want && !(c.want == "ring" && (got.Algo == "rhd" || got.Algo == "mesh")) {
			t.Errorf("AllReduce of %d at np 2 on 2 cores: chose %s, want %s\n%s", c.size, got.Algo, c.want, tab)
		}
	}
}

// TestEveryAlgorithmHasACost: an algorithm added to algo's registry
// needs its cost here (a shape_<algorithm>.go that registers it), or the
// selector could never choose it; and no cost is registered for a name
// the registry does not have.
func TestEveryAlgorithmHasACost(t *testing.T) {
	names := map[string]bool{}
	for _, a := range algo.All() {
		names[a.Name()] = true
		if costs[a.Name()] == nil {
			t.Errorf("algorithm %s has no cost: register one in shape_%s.go", a.Name(), a.Name())
		}
	}
	for name := range costs {
		if !names[name] {
			t.Errorf("a cost is registered for %q, which algo's registry does not have", name)
		}
	}
}

// topoLayout is a layout of contiguous servers that t describes: the
// largest first, the others as equal as possible.
func topoLayout(t Topo) *plan.Layout {
	sv := t.servers()
	if sv == 1 {
		return nil
	}
	var sizes []int
	n := t.Ranks
	if t.Largest > 0 {
		sizes = append(sizes, t.Largest)
		n -= t.Largest
		sv--
	}
	for g := range sv {
		sizes = append(sizes, n/sv+min(1, max(0, n%sv-g)))
	}
	return plan.SizesLayout(sizes...)
}

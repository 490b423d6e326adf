package algo

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// matrixSizes are the rank counts every algorithm is simulated at.
var matrixSizes = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 32, 64, 100}

// matrixCounts returns the counts tried at n ranks: empty, one element,
// odd ones, fewer than n, more than n and not divisible by n.
func matrixCounts(n int) []int {
	cs := []int{0, 1, 7, n + 3}
	if n > 8 {
		cs = append(cs, n-1)
	}
	if n <= 17 {
		cs = append(cs, 3*n+1)
	}
	return cs
}

func reduces(c plan.Coll) bool {
	return c == plan.AllReduce || c == plan.Reduce || c == plan.ReduceScatter
}

func inPlaceAllowed(c plan.Coll) bool {
	return c != plan.AlltoAll && c != plan.AlltoAllV && c != plan.Barrier
}

// hierTopos are the (ranks, ranks per server) pairs of even, contiguous
// servers the hierarchical algorithms are simulated at.
var hierTopos = [][2]int{{4, 2}, {6, 2}, {6, 3}, {8, 2}, {8, 4}, {9, 3}, {10, 5}, {12, 3}, {12, 4}, {15, 5}, {16, 4}, {16, 8}, {32, 8}, {64, 8}, {100, 10}}

// hierUneven are the servers' sizes of uneven, contiguous layouts.
var hierUneven = [][]int{{2, 1}, {1, 2}, {3, 2, 1}, {1, 2, 3}, {2, 1, 2}, {1, 1, 2}, {4, 1}, {1, 4}, {3, 5}, {5, 3, 3}, {2, 2, 2, 1}, {1, 3, 1, 3, 2}, {7, 1, 1}, {8, 5, 3}, {13, 4, 1, 2}, {20, 20, 24}}

// hierScattered are layouts whose servers' ranks are not contiguous: the
// server label of each rank (round robin as mpirun --map-by node numbers
// them, and worse), even ones among them.
var hierScattered = [][]int{
	{0, 1, 0},
	{0, 1, 0, 1},
	{0, 1, 2, 0, 1, 0},
	{0, 1, 2, 0, 1, 2},
	{1, 0, 0, 1, 1},
	{2, 0, 1, 1, 0, 2, 2, 1},
	{0, 1, 1, 0, 2, 2, 2, 0, 1, 0, 3},
	{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3},
	{0, 0, 1, 2, 1, 2, 0, 0, 1, 2, 3, 3, 3, 0},
}

// hierLayouts are all of the above as layouts.
func hierLayouts() []*plan.Layout {
	var ls []*plan.Layout
	for _, t := range hierTopos {
		ls = append(ls, plan.EvenLayout(t[0], t[1]))
	}
	for _, sizes := range hierUneven {
		ls = append(ls, plan.SizesLayout(sizes...))
	}
	for _, labels := range hierScattered {
		l, err := plan.NewLayout(labels)
		if err != nil {
			panic(err)
		}
		ls = append(ls, l)
	}
	return ls
}

// matrix lists every case for algorithm a and collective coll.
func matrix(a plan.Algorithm, coll plan.Coll) []simCase {
	var cases []simCase
	type topo struct {
		n      int
		layout *plan.Layout
	}
	var topos []topo
	_, hier := a.(Hier)
	if hier {
		for _, l := range hierLayouts() {
			topos = append(topos, topo{l.Ranks(), l})
		}
	} else {
		for _, n := range matrixSizes {
			if testing.Short() && n > 32 {
				continue // -short: the large jobs cost most of the time
			}
			topos = append(topos, topo{n, nil})
		}
	}
	for _, tp := range topos {
		n := tp.n
		counts := matrixCounts(n)
		if hier && n <= 17 {
			counts = append(counts, 1031) // large and odd: every chunk and bundle long
		}
		if coll == plan.Barrier {
			counts = []int{0}
		}
		roots := []int{0}
		if coll == plan.Broadcast || coll == plan.Reduce {
			if n <= 8 {
				roots = roots[:0]
				for r := 0; r < n; r++ {
					roots = append(roots, r)
				}
			} else {
				roots = append(roots, n/2+1, n-1)
			}
		}
		ops := []string{"sum"}
		if reduces(coll) {
			ops = append(ops, "max")
		}
		if coll == plan.AllReduce {
			ops = append(ops, "ordered")
		}
		ips := []bool{false}
		if inPlaceAllowed(coll) {
			ips = append(ips, true)
		}
		for _, count := range counts {
			for _, root := range roots {
				for _, ip := range ips {
					for _, op := range ops {
						c := simCase{alg: a, coll: coll, n: n, count: count, root: root, inPlace: ip, op: op, servers: tp.layout}
						cases = append(cases, c)
						if _, ok := a.(PAT); ok && count > 1 {
							// Room for pieces of two elements: pipelined trees.
							c.scratchLimit = 2 * (ceilLog2(n) + 1) * (3 << ceilLog2(n)) / 2
							cases = append(cases, c)
						}
					}
				}
			}
		}
	}
	return cases
}

// TestSimulatorMatrix runs every algorithm x collective it serves x rank
// count x count x placement x root x op through plan.Simulate and checks the
// results exactly.
func TestSimulatorMatrix(t *testing.T) {
	deadline := time.Now().Add(5 * time.Minute)
	for _, a := range All() {
		for _, coll := range a.(Collectives).Colls() {
			t.Run(a.Name()+"/"+coll.String(), func(t *testing.T) {
				fails := 0
				cases := matrix(a, coll)
				for _, c := range cases {
					if time.Now().After(deadline) {
						t.Fatalf("matrix exceeded its deadline at %s", c)
					}
					if _, err := c.run(); err != nil {
						t.Errorf("%s: %v", c, err)
						if fails++; fails == 5 {
							t.FailNow()
						}
					}
				}
				t.Logf("%d cases", len(cases))
			})
		}
	}
}

// TestRounds checks the latency structure each algorithm promises, as
// counted by the simulator's longest chain of dependent transfers.
func TestRounds(t *testing.T) {
	ring, tree, diss, pw := Ring{}, Tree{}, Dissemination{}, Pairwise{}
	tests := []struct {
		c    simCase
		want int
	}{
		{simCase{alg: ring, coll: plan.AllReduce, n: 4, count: 8, op: "sum"}, 6},
		{simCase{alg: ring, coll: plan.AllReduce, n: 7, count: 100, op: "sum"}, 12},
		{simCase{alg: ring, coll: plan.AllGather, n: 5, count: 3, op: "sum"}, 4},
		{simCase{alg: ring, coll: plan.ReduceScatter, n: 5, count: 3, op: "sum"}, 4},
		{simCase{alg: ring, coll: plan.Broadcast, n: 5, count: 50, root: 2, op: "sum"}, 8},
		{simCase{alg: ring, coll: plan.Barrier, n: 6, op: "sum"}, 5},
		{simCase{alg: tree, coll: plan.Broadcast, n: 9, count: 5, root: 3, op: "sum"}, 4},
		{simCase{alg: tree, coll: plan.Broadcast, n: 8, count: 5, op: "sum"}, 3},
		{simCase{alg: tree, coll: plan.Reduce, n: 8, count: 5, root: 7, op: "sum"}, 3},
		{simCase{alg: diss, coll: plan.Barrier, n: 17, op: "sum"}, 5},
		{simCase{alg: diss, coll: plan.Barrier, n: 16, op: "sum"}, 4},
		{simCase{alg: pw, coll: plan.AlltoAll, n: 17, count: 2, op: "sum"}, 1},
		{simCase{alg: pw, coll: plan.AlltoAll, n: 40, count: 2, op: "sum"}, 3},
		{simCase{alg: RHD{}, coll: plan.AllReduce, n: 8, count: 64, op: "sum"}, 6},
		{simCase{alg: RHD{}, coll: plan.AllReduce, n: 5, count: 64, op: "sum"}, 6},
		{simCase{alg: RHD{}, coll: plan.ReduceScatter, n: 16, count: 3, op: "sum"}, 4},
		{simCase{alg: RHD{}, coll: plan.AllGather, n: 12, count: 3, op: "sum"}, 5},
		{simCase{alg: Mesh{}, coll: plan.AllReduce, n: 8, count: 64, op: "sum"}, 2},
		{simCase{alg: Mesh{}, coll: plan.Barrier, n: 8, op: "sum"}, 1},
		{simCase{alg: OneShot{}, coll: plan.AllReduce, n: 8, count: 64, op: "sum"}, 1},
		{simCase{alg: PAT{}, coll: plan.AllGather, n: 5, count: 3, op: "sum"}, 3},
		{simCase{alg: PAT{}, coll: plan.AllGather, n: 100, count: 2, op: "sum"}, 7},
		{simCase{alg: PAT{}, coll: plan.ReduceScatter, n: 100, count: 2, op: "sum"}, 7},
		{simCase{alg: PAT{}, coll: plan.ReduceScatter, n: 16, count: 2, op: "sum"}, 4},
		{simCase{alg: Hier{}, coll: plan.AllReduce, n: 32, servers: plan.EvenLayout(32, 8), count: 64, op: "sum"}, 7 + 4 + 7},
		// 8 pieces of 8 elements pipelined: 3 rounds + 7 steps of delay.
		{simCase{alg: PAT{}, coll: plan.AllGather, n: 8, count: 64, op: "sum", scratchLimit: 4 * 8 * 8}, 3 + 7},
		{simCase{alg: PAT{}, coll: plan.ReduceScatter, n: 8, count: 64, op: "sum", scratchLimit: 4 * 8 * 8}, 3 + 7},
		{simCase{alg: Hier{}, coll: plan.Broadcast, n: 32, servers: plan.EvenLayout(32, 8), count: 64, root: 13, op: "sum"}, 2 + 3},
	}
	for _, tt := range tests {
		res, err := tt.c.run()
		if err != nil {
			t.Errorf("%s: %v", tt.c, err)
			continue
		}
		if res.Rounds != tt.want {
			t.Errorf("%s: %d rounds, want %d", tt.c, res.Rounds, tt.want)
		}
	}
}

func TestPairwisePeersInFlight(t *testing.T) {
	for _, n := range []int{2, 3, 16, 17, 33, 64} {
		for r := 0; r < n; r++ {
			p, err := Pairwise{}.Build(plan.Request{Coll: plan.AlltoAll, Rank: r, Size: n, Count: 1})
			if err != nil {
				t.Fatal(err)
			}
			for si, st := range p.Steps {
				peers := map[int]bool{}
				for _, o := range st.Ops {
					if o.Kind == plan.OpSend {
						peers[o.Peer] = true
					}
				}
				if len(peers) > MaxPeersInFlight {
					t.Errorf("n=%d rank %d step %d: %d peers in flight", n, r, si, len(peers))
				}
			}
			if got := symmetricPeers(n, r); n > 2 && (got[0] != mod(r-1, n) || got[1] != mod(r+1, n)) {
				t.Errorf("n=%d rank %d: peers start %v, want rank-1, rank+1", n, r, got[:2])
			}
		}
	}
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name string
		a    plan.Algorithm
		req  plan.Request
		want error
	}{
		{"tree allreduce", Tree{}, plan.Request{Coll: plan.AllReduce, Size: 4, Count: 4}, ErrUnsupported},
		{"in-place alltoall", Ring{}, plan.Request{Coll: plan.AlltoAll, Size: 4, Count: 4, InPlace: true}, ErrUnsupported},
		{"rank outside", Ring{}, plan.Request{Coll: plan.AllReduce, Rank: 4, Size: 4, Count: 4}, ErrInvalid},
		{"negative count", Ring{}, plan.Request{Coll: plan.AllReduce, Size: 4, Count: -1}, ErrInvalid},
		{"bad root", Tree{}, plan.Request{Coll: plan.Broadcast, Size: 4, Count: 4, Root: 4}, ErrInvalid},
		{"pat scratch limit too small", PAT{}, plan.Request{Coll: plan.AllGather, Size: 8, Count: 64, ScratchLimit: 31}, ErrUnsupported},
		{"hier without servers", Hier{}, plan.Request{Coll: plan.AllReduce, Size: 8, Count: 64}, ErrUnsupported},
		{"hier at one rank per server", Hier{}, plan.Request{Coll: plan.AllReduce, Size: 3, Count: 64, Layout: plan.SizesLayout(1, 1, 1)}, ErrUnsupported},
		{"layout of other ranks", Hier{}, plan.Request{Coll: plan.AllReduce, Size: 4, Count: 64, Layout: plan.SizesLayout(2, 1)}, ErrInvalid},
		{"mesh across uneven servers", Mesh{}, plan.Request{Coll: plan.Broadcast, Size: 3, Count: 64, Layout: plan.SizesLayout(2, 1)}, ErrUnsupported},
		{"mesh across servers", Mesh{}, plan.Request{Coll: plan.AllReduce, Size: 8, Count: 64, Layout: plan.EvenLayout(8, 4)}, ErrUnsupported},
		{"oneshot across servers", OneShot{}, plan.Request{Coll: plan.AllReduce, Size: 8, Count: 64, Layout: plan.EvenLayout(8, 4)}, ErrUnsupported},
		{"short counts", Pairwise{}, plan.Request{Coll: plan.AlltoAllV, Size: 2, SendCounts: []int{1}}, ErrInvalid},
		{"overlapping receive blocks", Pairwise{}, plan.Request{Coll: plan.AlltoAllV, Size: 2,
			SendCounts: []int{1, 1}, SendDispls: []int{0, 1}, RecvCounts: []int{2, 2}, RecvDispls: []int{0, 1}}, ErrInvalid},
	}
	for _, tt := range tests {
		_, err := tt.a.Build(tt.req)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range All() {
		if seen[a.Name()] {
			t.Errorf("two algorithms named %q", a.Name())
		}
		seen[a.Name()] = true
		got, ok := Lookup(a.Name())
		if !ok || got.Name() != a.Name() {
			t.Errorf("Lookup(%q) = %v, %v", a.Name(), got, ok)
		}
		if len(a.(Collectives).Colls()) == 0 {
			t.Errorf("%s serves nothing", a.Name())
		}
	}
	if _, ok := Lookup("nosuch"); ok {
		t.Error("Lookup found an unknown algorithm")
	}
}

// TestGolden compares printed plans of a few small calls with
// testdata/*.golden; go test -update rewrites them.
func TestGolden(t *testing.T) {
	a2av := simCase{coll: plan.AlltoAllV, n: 3, count: 3}
	tests := []struct {
		name string
		a    plan.Algorithm
		reqs func(r int) plan.Request
		n    int
	}{
		{"ring_allreduce_n4", Ring{}, func(r int) plan.Request {
			return plan.Request{Coll: plan.AllReduce, Rank: r, Size: 4, Count: 10}
		}, 4},
		{"tree_broadcast_n5_root2", Tree{}, func(r int) plan.Request {
			return plan.Request{Coll: plan.Broadcast, Rank: r, Size: 5, Count: 10, Root: 2}
		}, 5},
		{"pairwise_alltoallv_n3", Pairwise{}, a2av.request, 3},
		{"ring_alltoallv_n3", Ring{}, a2av.request, 3},
		{"rhd_allreduce_n5", RHD{}, func(r int) plan.Request {
			return plan.Request{Coll: plan.AllReduce, Rank: r, Size: 5, Count: 9}
		}, 5},
		{"hier_allreduce_n4_k2", Hier{}, func(r int) plan.Request {
			return plan.Request{Coll: plan.AllReduce, Rank: r, Size: 4, Count: 8, Layout: plan.EvenLayout(4, 2)}
		}, 4},
		{"pat_allgather_n5", PAT{}, func(r int) plan.Request {
			return plan.Request{Coll: plan.AllGather, Rank: r, Size: 5, Count: 2}
		}, 5},
		{"pat_reducescatter_n5", PAT{}, func(r int) plan.Request {
			return plan.Request{Coll: plan.ReduceScatter, Rank: r, Size: 5, Count: 2}
		}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			for r := 0; r < tt.n; r++ {
				req := tt.reqs(r)
				if req.Coll == plan.AlltoAllV {
					fmt.Fprintf(&b, "# rank %d send counts %v displs %v, recv counts %v displs %v\n",
						r, req.SendCounts, req.SendDispls, req.RecvCounts, req.RecvDispls)
				}
				p, err := tt.a.Build(req)
				if err != nil {
					t.Fatal(err)
				}
				b.WriteString(p.String())
			}
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if b.String() != string(want) {
				t.Errorf("plans differ from %s:\n%s", path, b.String())
			}
		})
	}
}

// TestPairwiseNoHotspot: in every step of a pairwise AlltoAll each rank
// sends to as many peers as it receives from, and every rank is the target
// of the same number of transfers, so no link or rank is oversubscribed.
func TestPairwiseNoHotspot(t *testing.T) {
	for _, n := range []int{2, 3, 5, 16, 17, 40, 64} {
		plans := make([]*plan.Plan, n)
		for r := range plans {
			p, err := Pairwise{}.Build(plan.Request{Coll: plan.AlltoAll, Rank: r, Size: n, Count: 1})
			if err != nil {
				t.Fatal(err)
			}
			plans[r] = p
		}
		for si := range plans[0].Steps {
			in := make([]int, n)
			for r, p := range plans {
				if len(p.Steps) != len(plans[0].Steps) {
					t.Fatalf("n=%d: ranks 0 and %d have %d and %d steps", n, r, len(plans[0].Steps), len(p.Steps))
				}
				sends, recvs := 0, 0
				for _, o := range p.Steps[si].Ops {
					switch o.Kind {
					case plan.OpSend:
						sends++
						in[o.Peer]++
					case plan.OpRecv:
						recvs++
					}
				}
				if sends != recvs {
					t.Errorf("n=%d rank %d step %d: %d sends, %d receives", n, r, si, sends, recvs)
				}
			}
			for r := range in {
				if in[r] != in[0] {
					t.Errorf("n=%d step %d: rank %d is the target of %d transfers, rank 0 of %d", n, si, r, in[r], in[0])
				}
			}
		}
	}
}

// BenchmarkBuild measures building one rank's plan, which the runtime
// caches per call shape.
func BenchmarkBuild(b *testing.B) {
	for _, bc := range []struct {
		a   plan.Algorithm
		req plan.Request
	}{
		{Ring{}, plan.Request{Coll: plan.AllReduce, Rank: 3, Size: 64, Count: 1 << 20}},
		{RHD{}, plan.Request{Coll: plan.AllReduce, Rank: 3, Size: 100, Count: 1 << 20}},
		{Pairwise{}, plan.Request{Coll: plan.AlltoAll, Rank: 3, Size: 64, Count: 1024}},
		{PAT{}, plan.Request{Coll: plan.AllGather, Rank: 3, Size: 1000, Count: 1024}},
		{Hier{}, plan.Request{Coll: plan.AllReduce, Rank: 3, Size: 64, Count: 1 << 20, Layout: plan.EvenLayout(64, 8)}},
	} {
		b.Run(bc.a.Name()+"/"+bc.req.Coll.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.a.Build(bc.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

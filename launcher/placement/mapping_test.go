package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func hosts(spec string) []Host {
	// "a:2/4,b:2" = a with 2 slots and max_slots 4, b with 2 slots.
	var hs []Host
	for _, e := range strings.Split(spec, ",") {
		var h Host
		name, rest, _ := strings.Cut(e, ":")
		h.Name = name
		if s, m, ok := strings.Cut(rest, "/"); ok {
			fmt.Sscan(s, &h.Slots)
			fmt.Sscan(m, &h.MaxSlots)
		} else {
			fmt.Sscan(rest, &h.Slots)
		}
		hs = append(hs, h)
	}
	return hs
}

// layout renders a placement as "a=0-1 b=2", the ranks of each node.
func layout(p *Placement) string {
	var parts []string
	for _, n := range p.Nodes {
		r := fmt.Sprint(n.FirstRank)
		if n.Ranks > 1 {
			r += fmt.Sprintf("-%d", n.FirstRank+n.Ranks-1)
		}
		parts = append(parts, n.Host.Name+"="+r)
	}
	return strings.Join(parts, " ")
}

func TestMap(t *testing.T) {
	tests := []struct {
		name  string
		hosts string
		opts  Options
		want  string // layout, or the error's text when err
		err   bool
	}{
		{"slot default np", "a:2,b:2", Options{}, "a=0-1 b=2-3", false},
		{"slot np 3", "a:2,b:2", Options{NP: 3}, "a=0-1 b=2", false},
		{"slot np 1 leaves hosts out", "a:2,b:2", Options{NP: 1}, "a=0", false},
		// Open MPI would put ranks 0,2 on a and 1 on b; we keep its counts
		// and number contiguously.
		{"node np 3", "a:2,b:2", Options{NP: 3, MapBy: MapByNode}, "a=0-1 b=2", false},
		{"node skips full hosts", "a:1,b:3", Options{NP: 4, MapBy: MapByNode}, "a=0 b=1-3", false},
		{"node uneven", "a:4,b:1,c:2", Options{NP: 5, MapBy: MapByNode}, "a=0-1 b=2 c=3-4", false},
		{"node np 1", "a:2,b:2,c:2", Options{NP: 1, MapBy: MapByNode}, "a=0", false},
		{"node default np", "a:3,b:1", Options{MapBy: MapByNode}, "a=0-2 b=3", false},
		{"slot oversubscribed", "a:2,b:2", Options{NP: 7, Oversubscribe: true}, "a=0-3 b=4-6", false},
		{"node oversubscribed", "a:1,b:1", Options{NP: 3, MapBy: MapByNode, Oversubscribe: true}, "a=0-1 b=2", false},
		{"oversubscribe default np is slots", "a:2,b:1", Options{Oversubscribe: true}, "a=0-1 b=2", false},
		{"oversubscribe respects max", "a:2/3,b:2", Options{NP: 8, Oversubscribe: true}, "a=0-2 b=3-7", false},
		{"oversubscribe up to max", "a:2/3,b:2/3", Options{NP: 6, Oversubscribe: true}, "a=0-2 b=3-5", false},
		{"pernode", "a:4,b:4", Options{PerNode: 2}, "a=0-1 b=2-3", false},
		{"pernode np 3", "a:4,b:4,c:4", Options{PerNode: 2, NP: 3}, "a=0-1 b=2", false},
		{"pernode slot explicit", "a:4,b:4", Options{PerNode: 1, MapBy: MapBySlot}, "a=0 b=1", false},
		{"pernode oversubscribed", "a:2,b:2", Options{PerNode: 3, Oversubscribe: true}, "a=0-2 b=3-5", false},

		{"not enough slots", "a:2,b:2", Options{NP: 5},
			"placement: 5 ranks requested but the 2 hosts have 4 slots (use --oversubscribe): not enough slots", true},
		{"not enough slots by node", "a:2,b:2", Options{NP: 9, MapBy: MapByNode},
			"placement: 9 ranks requested but the 2 hosts have 4 slots (use --oversubscribe): not enough slots", true},
		{"max is hard", "a:2/3,b:2/3", Options{NP: 7, Oversubscribe: true},
			"placement: 7 ranks requested but max_slots allows only 6 on the 2 hosts: not enough slots", true},
		{"pernode np too big", "a:4,b:4", Options{PerNode: 3, NP: 7},
			"placement: -np 7 exceeds -N 3 on 2 hosts (6 ranks): not enough slots", true},
		{"pernode over slots", "a:4,b:2", Options{PerNode: 3},
			"placement: -N 3 exceeds the 2 slots of host b (use --oversubscribe): not enough slots", true},
		{"pernode over max", "a:2/2", Options{PerNode: 3, Oversubscribe: true},
			"placement: -N 3 exceeds max_slots=2 of host a: not enough slots", true},
		{"pernode and node", "a:2", Options{PerNode: 1, MapBy: MapByNode}, "placement: -N 1 conflicts with --map-by node", true},
		{"negative np", "a:2", Options{NP: -1}, "placement: -np -1 is negative", true},
		{"negative pernode", "a:2", Options{PerNode: -1}, "placement: -N -1 is negative", true},
		{"bad policy", "a:2", Options{MapBy: 7}, "placement: unknown mapping policy MapBy(7)", true},
		{"duplicate host", "a:2,a:2", Options{}, "placement: host a listed twice", true},
		{"zero slots", "a:0", Options{}, "placement: host a has 0 slots, want at least 1", true},
		{"huge slots", "a:2/2000000", Options{}, "placement: host a has slots=2 max_slots=2000000, want 0..1048576", true},
		{"slots over max", "a:3/2", Options{}, "placement: host a has 3 slots, more than its max_slots=2", true},
		{"bad name", "-x:1", Options{}, `placement: host name "-x" starts with "-"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Map(hosts(tt.hosts), tt.opts)
			if tt.err {
				if err == nil || err.Error() != tt.want {
					t.Fatalf("err = %v\n want %s", err, tt.want)
				}
				if strings.HasSuffix(tt.want, "not enough slots") && !errors.Is(err, ErrNotEnoughSlots) {
					t.Errorf("%v does not wrap ErrNotEnoughSlots", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := layout(p); got != tt.want {
				t.Errorf("layout %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := Map(nil, Options{}); err == nil {
		t.Error("Map of no hosts succeeded")
	}
}

// naiveCounts is the obvious one-rank-at-a-time version of Map's counts:
// the reference the bulk round robin must agree with.
func naiveCounts(hs []Host, opts Options) []int {
	counts := make([]int, len(hs))
	np := opts.NP
	if np == 0 {
		for _, h := range hs {
			np += h.Slots
		}
	}
	deal := func(limit func(int) int) {
		for np > 0 {
			placed := false
			for i := range hs {
				if np > 0 && counts[i] < limit(i) {
					counts[i]++
					np--
					placed = true
				}
			}
			if !placed {
				return
			}
		}
	}
	if opts.MapBy == MapBySlot {
		for i, h := range hs {
			c := min(h.Slots, np)
			counts[i] += c
			np -= c
		}
	} else {
		deal(func(i int) int { return hs[i].Slots })
	}
	if opts.Oversubscribe {
		deal(func(i int) int { return hardCap(hs[i]) })
	}
	if np > 0 {
		return nil
	}
	return counts
}

func TestMapAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		hs := make([]Host, 1+rng.IntN(6))
		for i := range hs {
			hs[i] = Host{Name: fmt.Sprintf("h%d", i), Slots: 1 + rng.IntN(5)}
			if rng.IntN(3) == 0 {
				hs[i].MaxSlots = hs[i].Slots + rng.IntN(4)
			}
		}
		opts := Options{NP: rng.IntN(40), MapBy: MapBy(rng.IntN(2)), Oversubscribe: rng.IntN(2) == 0}
		want := naiveCounts(hs, opts)
		p, err := Map(hs, opts)
		if want == nil {
			if !errors.Is(err, ErrNotEnoughSlots) {
				t.Fatalf("iter %d: %+v %+v: reference cannot place, Map gave %v", iter, hs, opts, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("iter %d: %+v %+v: %v", iter, hs, opts, err)
		}
		next, k := 0, 0
		for i, c := range want {
			if c == 0 {
				continue
			}
			n := p.Nodes[k]
			if n.Host.Name != hs[i].Name || n.Ranks != c || n.FirstRank != next {
				t.Fatalf("iter %d: %+v %+v: node %d = %+v, want %s with %d ranks from %d", iter, hs, opts, k, n, hs[i].Name, c, next)
			}
			next += c
			k++
		}
		if k != len(p.Nodes) || p.Size() != next {
			t.Fatalf("iter %d: %d nodes / size %d, want %d / %d", iter, len(p.Nodes), p.Size(), k, next)
		}
		for r := range next {
			node, local, err := p.Locate(r)
			if err != nil || p.Nodes[node].FirstRank+local != r {
				t.Fatalf("iter %d: Locate(%d) = %d, %d, %v", iter, r, node, local, err)
			}
		}
	}
}

func TestMapLargeOversubscription(t *testing.T) {
	// The bulk round robin makes the largest job on a thousand hosts cheap.
	hs := make([]Host, 1000)
	for i := range hs {
		hs[i] = Host{Name: fmt.Sprintf("n%d", i), Slots: 1}
	}
	hs[0].MaxSlots = 1
	const np = 1 + 999*65
	p, err := Map(hs, Options{NP: np, MapBy: MapByNode, Oversubscribe: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Size() != np || p.Nodes[0].Ranks != 1 || p.Nodes[1].Ranks != 65 || p.Nodes[999].Ranks != 65 {
		t.Fatalf("size %d, nodes[0..1] %+v %+v, nodes[999] %+v", p.Size(), p.Nodes[0], p.Nodes[1], p.Nodes[999])
	}
	if !p.Oversubscribed() || p.Nodes[0].Oversubscribed() {
		t.Error("Oversubscribed is wrong")
	}
	if _, _, err := p.Locate(np); err == nil {
		t.Error("Locate past the end succeeded")
	}
}

// TestMapRankLimit: more than ranktable.MaxRanks ranks, asked for with -np
// or made by the slots, is refused.
func TestMapRankLimit(t *testing.T) {
	big := []Host{{Name: "a", Slots: 1 << 20}, {Name: "b", Slots: 1 << 20}}
	tests := []struct {
		hosts []Host
		opts  Options
		msg   string
	}{
		{hosts("a:1"), Options{NP: 1_000_000, Oversubscribe: true}, "-np 1000000 is more than the 65536 ranks"},
		{big, Options{}, "the hosts' slots make more than the 65536 ranks"},
		{big, Options{PerNode: 40000}, "the hosts' slots make more than the 65536 ranks"},
	}
	for _, tt := range tests {
		if _, err := Map(tt.hosts, tt.opts); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("Map(%v, %+v): %v, want %q", tt.hosts, tt.opts, err, tt.msg)
		}
	}
	if p, err := Map(big, Options{NP: 1 << 16}); err != nil || p.Size() != 1<<16 {
		t.Errorf("Map of 65536 ranks: %v", err)
	}
}

func TestParseMapBy(t *testing.T) {
	for in, want := range map[string]MapBy{"slot": MapBySlot, "NODE": MapByNode} {
		if got, err := ParseMapBy(in); err != nil || got != want {
			t.Errorf("ParseMapBy(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseMapBy("core"); err == nil || !strings.Contains(err.Error(), "want slot or node") {
		t.Errorf("ParseMapBy(core) error = %v", err)
	}
}

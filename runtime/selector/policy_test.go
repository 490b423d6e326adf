package selector

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

func TestParseAlgo(t *testing.T) {
	tests := []struct {
		spec string
		err  string // substring of the error, "" for success
		// allowed and refused pairs "coll/algo" to check on success
		allow, refuse []string
	}{
		{spec: "", allow: []string{"AllReduce/ring", "AllReduce/rhd"}},
		{spec: "ring", allow: []string{"AllReduce/ring", "Barrier/ring"}, refuse: []string{"AllReduce/rhd", "Barrier/dissemination"}},
		{spec: "^ring", allow: []string{"AllReduce/rhd"}, refuse: []string{"AllReduce/ring", "AllGather/ring"}},
		{spec: "allreduce:rhd;allgather:pat", allow: []string{"AllReduce/rhd", "AllGather/pat", "Broadcast/ring", "Broadcast/tree"},
			refuse: []string{"AllReduce/ring", "AllGather/ring"}},
		{spec: " AllReduce : RHD , ring ; ^pat ", allow: []string{"AllReduce/ring", "AllReduce/rhd", "AllGather/ring"},
			refuse: []string{"AllReduce/mesh", "AllGather/pat"}},
		{spec: "ring;barrier:dissemination", allow: []string{"Barrier/dissemination", "Broadcast/ring"}, refuse: []string{"Broadcast/tree"}},
		{spec: "allreduce:pat", err: "AllReduce forced onto pat, which does not implement it"},
		{spec: "allreduce:nosuch", err: `unknown algorithm "nosuch"`},
		{spec: "allsum:ring", err: `unknown collective "allsum"`},
		{spec: "allreduce:ring;allreduce:rhd", err: "two clauses for AllReduce"},
		{spec: "ring;rhd", err: "two clauses for every collective"},
		{spec: "allreduce:", err: "empty algorithm name"},
		{spec: "ring,,rhd", err: "empty algorithm name"},
		{spec: "^", err: "empty algorithm name"},
	}
	for _, tt := range tests {
		p, err := ParseAlgo(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseAlgo(%q) = %v, want error containing %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAlgo(%q): %v", tt.spec, err)
			continue
		}
		for _, list := range []struct {
			pairs []string
			want  bool
		}{{tt.allow, true}, {tt.refuse, false}} {
			for _, pair := range list.pairs {
				c, name, _ := strings.Cut(pair, "/")
				coll, err := ParseColl(c)
				if err != nil {
					t.Fatal(err)
				}
				if ok, _ := p.allows(coll, 1, name); ok != list.want {
					t.Errorf("ParseAlgo(%q): allows(%s, %s) = %v, want %v", tt.spec, coll, name, ok, list.want)
				}
			}
		}
	}
}

// TestForcedErrors: a forced algorithm that cannot serve a call is an error
// that says why, never a silent fallback.
func TestForcedErrors(t *testing.T) {
	tests := []struct {
		spec string
		call Call
		want string
	}{
		{"pat", Call{plan.AllReduce, 1024, Topo{Ranks: 4, Servers: 1}}, "pat does not implement AllReduce (it serves AllGather, ReduceScatter)"},
		{"mesh", Call{plan.AllReduce, 1024, Topo{Ranks: 8, Servers: 2}}, "mesh runs within one server, the job spans 2"},
		{"allreduce:mesh,oneshot", Call{plan.AllReduce, 1024, Topo{Ranks: 8, Servers: 4}}, "oneshot runs within one server"},
		{"tree", Call{plan.AllGather, 1024, Topo{Ranks: 8, Servers: 1}}, "tree does not implement AllGather"},
	}
	for _, tt := range tests {
		p, err := ParseAlgo(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(DefaultModel(), p, nil).Choose(tt.call)
		if !errors.Is(err, ErrNoAlgorithm) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.spec) {
			t.Errorf("HCCL_ALGO=%s, %s: got %v, want an error naming the spec and %q", tt.spec, tt.call, err, tt.want)
		}
	}
}

func TestForcedChoices(t *testing.T) {
	tests := []struct {
		spec string
		call Call
		want string
	}{
		{"allreduce:rhd;allgather:pat", Call{plan.AllReduce, 64 << 20, Topo{Ranks: 4, Servers: 1}}, "rhd"},
		{"allreduce:rhd;allgather:pat", Call{plan.AllGather, 64 << 20, Topo{Ranks: 4, Servers: 1}}, "pat"},
		{"ring", Call{plan.Barrier, 0, Topo{Ranks: 64, Servers: 8}}, "ring"},
		{"ring", Call{plan.Broadcast, 8, Topo{Ranks: 64, Servers: 8}}, "ring"},
		// What is left is ring and rhd; at np 4 on 2 cores rhd measured
		// faster (docs/selector.md: cal27 10.3 us against ring's 10.3,
		// cal29 5.43 against 5.99, and from 32 B on by 8-80%).
		{"^oneshot,mesh", Call{plan.AllReduce, 8, Topo{Ranks: 4, Servers: 1}}, "rhd"},
	}
	for _, tt := range tests {
		p, err := ParseAlgo(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(DefaultModel(), p, nil).Choose(tt.call)
		if err != nil {
			t.Errorf("HCCL_ALGO=%s, %s: %v", tt.spec, tt.call, err)
			continue
		}
		if c.Algo.Name() != tt.want {
			t.Errorf("HCCL_ALGO=%s, %s: chose %s, want %s", tt.spec, tt.call, c.Algo.Name(), tt.want)
		}
	}
}

func TestParseColl(t *testing.T) {
	for _, c := range collectives {
		got, err := ParseColl(strings.ToUpper(c.String()))
		if err != nil || got != c {
			t.Errorf("ParseColl(%q) = %v, %v", c, got, err)
		}
	}
	if _, err := ParseColl("sendrecv"); err == nil {
		t.Error("ParseColl accepted sendrecv, which HCCL_ALGO cannot name")
	}
}

// TestParseHCCL: HCCL's own grammar, its names mapped to ours, resolved
// per call by the servers it spans (level0 within one server, level1
// across), and every value we cannot serve refused, naming it.
func TestParseHCCL(t *testing.T) {
	one, two, spread := Topo{Ranks: 8, Servers: 1}, Topo{Ranks: 8, Servers: 2}, Topo{Ranks: 4, Servers: 4} // spread: one rank per server
	type choice struct {
		coll plan.Coll
		topo Topo
		want string // the algorithm chosen at 1 MiB, "" for any the selector likes
		only []string
	}
	tests := []struct {
		spec    string
		err     string
		choices []choice
	}{
		{spec: "level0:NA;level1:H-D_R", choices: []choice{
			{plan.AllReduce, one, "", nil},
			{plan.AllReduce, two, "", []string{"hier", "rhd"}},
			{plan.AllReduce, spread, "rhd", nil},
			{plan.Broadcast, two, "", []string{"hier", "tree"}},
			{plan.Broadcast, spread, "tree", nil},
			{plan.AlltoAll, two, "", nil}, // H-D_R is not an AlltoAll algorithm in HCCL either
			{plan.Barrier, two, "", nil},
		}},
		{spec: " LEVEL0:na ; level1:h-d_r ", choices: []choice{{plan.AllGather, two, "", []string{"hier", "rhd"}}}},
		{spec: "level1:ring", choices: []choice{{plan.AllReduce, two, "ring", nil}, {plan.AllReduce, one, "", nil}}},
		{spec: "level0:ring;level1:NA", choices: []choice{{plan.AllReduce, one, "ring", nil}, {plan.AllReduce, two, "", nil}}},
		{spec: "level0:fullmesh", choices: []choice{{plan.AllReduce, one, "", []string{"mesh", "oneshot"}}, {plan.AlltoAll, one, "mesh", nil}, {plan.AllReduce, two, "", nil}}},
		{spec: "level0:NA;level1:NHR", choices: []choice{
			{plan.AllGather, two, "pat", nil}, {plan.ReduceScatter, spread, "pat", nil},
			{plan.AllReduce, two, "rhd", nil}, {plan.Reduce, two, "tree", nil},
		}},
		{spec: "level0:NA;level1:NB", choices: []choice{{plan.AllGather, spread, "pat", nil}}},
		{spec: "level0:NA;level1:pipeline", choices: []choice{{plan.AllReduce, two, "hier", nil}, {plan.AllReduce, one, "", nil}}},
		{spec: "level0:NA;level1:pairwise", choices: []choice{{plan.AlltoAllV, two, "pairwise", nil}, {plan.AllReduce, two, "", nil}}},
		{spec: "allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R", choices: []choice{
			{plan.AllReduce, two, "ring", nil},
			{plan.AllGather, two, "", []string{"hier", "rhd"}},
			{plan.ReduceScatter, two, "", nil},
			{plan.AllReduce, one, "", nil},
		}},
		{spec: "alltoall=level0:NA;level1:pairwise/others=level0:NA;level1:ring", choices: []choice{
			{plan.AlltoAll, two, "pairwise", nil}, {plan.AlltoAllV, two, "pairwise", nil}, {plan.Broadcast, two, "ring", nil},
		}},
		{spec: "scatter=level0:NA;level1:ring", choices: []choice{{plan.AllReduce, two, "", nil}}},
		{spec: "level0:NA;level1:AHC", err: `level1:AHC (asymmetric hierarchical concatenate): hcclrun has no such algorithm; level1 accepts NA, ring, H-D_R`},
		{spec: "level0:NA;level1:fullmesh", err: "hcclrun's mesh runs within one server"},
		{spec: "level0:pipeline", err: "pipeline is an algorithm between servers"},
		{spec: "level0:NA;level1:foo", err: `unknown algorithm "foo"`},
		{spec: "level0:NA;level1:ring;level1:NB", err: "level1 twice"},
		{spec: "level0:NA;level2:ring", err: "level2 takes NA only"},
		{spec: "level9:NA", err: "want level0:<algo>"},
		{spec: "alltoall=level0:NA;level1:H-D_R", err: "alltoall=level1:H-D_R: H-D_R (recursive halving-doubling) does not serve AlltoAll here; level1 of AlltoAll accepts NA, pairwise"},
		{spec: "allreduce=level0:NA;level1:pairwise", err: "does not serve AllReduce"},
		{spec: "allsum=level0:NA;level1:ring", err: `unknown collective "allsum"`},
		{spec: "allreduce=level1:ring/allreduce=level1:NB", err: "two clauses for allreduce"},
		{spec: "allreduce=level1:ring/level1:NB", err: "do not mix"},
		{spec: "level1:ring/level1:NB", err: "not several"},
		{spec: "allreduce=ring", err: "want level0:<algo>"},
	}
	for _, tt := range tests {
		p, err := ParseAlgo(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseAlgo(%q) = %v, want error containing %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAlgo(%q): %v", tt.spec, err)
			continue
		}
		free, _ := ParseAlgo("")
		for _, c := range tt.choices {
			call := Call{c.coll, 1 << 20, c.topo}
			got, err := New(DefaultModel(), p, nil).Choose(call)
			if err != nil {
				t.Errorf("HCCL_ALGO=%q, %s: %v", tt.spec, call, err)
				continue
			}
			want := c.want
			switch {
			case want == "" && c.only == nil:
				// Unconstrained: what the selector chooses on its own.
				unforced, _ := New(DefaultModel(), free, nil).Choose(call)
				want = unforced.Algo.Name()
			case want == "":
				if !slices.Contains(c.only, got.Algo.Name()) {
					t.Errorf("HCCL_ALGO=%q, %s: chose %s, want one of %v", tt.spec, call, got.Algo.Name(), c.only)
				}
				continue
			}
			if got.Algo.Name() != want {
				t.Errorf("HCCL_ALGO=%q, %s: chose %s, want %s", tt.spec, call, got.Algo.Name(), want)
			}
		}
	}
}

package selector

import (
	"errors"
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
				if ok, _ := p.allows(coll, name); ok != list.want {
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
		{"pat", Call{plan.AllReduce, 1024, Topo{4, 1}}, "pat does not implement AllReduce (it serves AllGather, ReduceScatter)"},
		{"mesh", Call{plan.AllReduce, 1024, Topo{8, 2}}, "mesh runs within one server, the job spans 2"},
		{"allreduce:mesh,oneshot", Call{plan.AllReduce, 1024, Topo{8, 4}}, "oneshot runs within one server"},
		{"tree", Call{plan.AllGather, 1024, Topo{8, 1}}, "tree does not implement AllGather"},
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
		{"allreduce:rhd;allgather:pat", Call{plan.AllReduce, 64 << 20, Topo{4, 1}}, "rhd"},
		{"allreduce:rhd;allgather:pat", Call{plan.AllGather, 64 << 20, Topo{4, 1}}, "pat"},
		{"ring", Call{plan.Barrier, 0, Topo{64, 8}}, "ring"},
		{"ring", Call{plan.Broadcast, 8, Topo{64, 8}}, "ring"},
		// What is left is ring and rhd; at np 4 on 2 cores rhd measured
		// faster (docs/selector.md: cal27 10.3 us against ring's 10.3,
		// cal29 5.43 against 5.99, and from 32 B on by 8-80%).
		{"^oneshot,mesh", Call{plan.AllReduce, 8, Topo{4, 1}}, "rhd"},
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

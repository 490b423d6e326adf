package selector

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// TestPATScratch: under the runtime's scratch bound (Model.Scratch,
// HCCL_BUFFSIZE) PAT is priced its pieces' steps and, where it cannot run
// at all, not chosen; forced, it is an error that names the bound.
func TestPATScratch(t *testing.T) {
	topo := Topo{Ranks: 600, Servers: 600} // one rank per server, where PAT is chosen
	free, bounded := DefaultModel(), DefaultModel()
	bounded.Scratch = 64 << 10
	none, _ := ParseAlgo("")
	for _, tt := range []struct {
		bytes         int64
		free, bounded string
	}{
		{1 << 10, "pat", "pat"},  // one piece fits
		{64 << 10, "pat", "rhd"}, // pieces needed, and 8 KiB of 8-byte elements are fewer than PAT's minimum
	} {
		call := Call{plan.AllGather, tt.bytes, topo}
		for _, m := range []struct {
			model Model
			want  string
		}{{free, tt.free}, {bounded, tt.bounded}} {
			c, err := New(m.model, none, nil).Choose(call)
			if err != nil || c.Algo.Name() != m.want {
				t.Errorf("%s, scratch %d: chose %v, %v; want %s", call, m.model.Scratch, c.Algo, err, m.want)
			}
		}
	}
	forced, _ := ParseAlgo("allgather:pat")
	_, err := New(bounded, forced, nil).Choose(Call{plan.AllGather, 64 << 10, topo})
	if !errors.Is(err, ErrNoAlgorithm) || !strings.Contains(err.Error(), "HCCL_BUFFSIZE bounds its scratch to 64 KiB") {
		t.Errorf("pat forced under a bound it cannot meet: %v", err)
	}
	// Where it fits in pieces, the pieces cost steps.
	call := Call{plan.ReduceScatter, 1 << 20, topo}
	pieces := DefaultModel()
	pieces.Scratch = 256 << 10
	if a, b := free.estimate("pat", call), pieces.estimate("pat", call); a.Err != nil || b.Err != nil || b.Time <= a.Time {
		t.Errorf("%s: pat unbounded %v (%v), in pieces %v (%v): want the pieces dearer", call, a.Time, a.Err, b.Time, b.Err)
	}
}

// TestPATScratchAgrees: whenever the selector prices PAT as able under a
// scratch bound, PAT builds the plan under the limit the runtime gives it
// (plan.Request.ScratchLimit, in elements) for every element size, so the
// selector never chooses PAT for a call PAT then refuses.
func TestPATScratchAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 1))
	for range 3000 {
		n := 2 + rng.IntN(300)
		elem := []int{1, 2, 4, 8}[rng.IntN(4)]
		count := rng.IntN(4096)
		scratch := int64(4096 + rng.IntN(1<<20))
		coll := []plan.Coll{plan.AllGather, plan.ReduceScatter}[rng.IntN(2)]
		m := DefaultModel()
		m.Scratch = scratch
		call := Call{coll, int64(n * count * elem), Topo{Ranks: n, Servers: n}}
		if m.estimate("pat", call).Err != nil {
			continue
		}
		req := plan.Request{Coll: coll, Rank: rng.IntN(n), Size: n, Count: count, ScratchLimit: int(scratch) / elem}
		if _, err := (algo.PAT{}).Build(req); err != nil {
			t.Fatalf("%s, %d-byte elements, scratch %d: priced as able, but %v", call, elem, scratch, err)
		}
	}
}

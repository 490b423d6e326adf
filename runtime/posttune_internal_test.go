package runtime

import (
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// TestPostTunerSchedule: a class goes in place, untimed, for postAfter
// calls; then postBlock calls in place and postBlock through the rings,
// each block's first call untimed; the ranks settle after the last; a
// decided class goes its way without being counted or timed.
func TestPostTunerSchedule(t *testing.T) {
	var tu postTuner
	warmed := 0
	warm := func() { warmed++ }
	total := postAfter + 2*postBlock
	timed := 0
	for call := 1; call <= total; call++ {
		d := tu.choose(plan.AllGather, false, 1<<20, warm)
		i := call - 1 - postAfter
		wantPost := i < postBlock
		wantTimed := i >= 0 && i%postBlock != 0
		if d.post != wantPost || d.timed != wantTimed || d.settles != (call == total) {
			t.Fatalf("call %d: post %v timed %v settles %v; want %v %v %v", call, d.post, d.timed, d.settles, wantPost, wantTimed, call == total)
		}
		if d.timed {
			timed++
			tu.record(d, 1)
		}
	}
	if warmed != timed || timed != 2*(postBlock-1) {
		t.Fatalf("%d calls timed, warm called %d times; want %d", timed, warmed, 2*(postBlock-1))
	}
	// Another size class, or the in-place form, start over.
	if d := tu.choose(plan.AllGather, false, 2<<20, warm); d.timed || !d.post || len(tu.classes) != 2 {
		t.Fatalf("a new class: %+v, %d classes", d, len(tu.classes))
	}
	if d := tu.choose(plan.AllGather, true, 1<<20, warm); d.timed || !d.post || len(tu.classes) != 3 {
		t.Fatalf("the in-place form: %+v, %d classes", d, len(tu.classes))
	}
	c := tu.classes[postKey{plan.AllGather, false, 21}]
	if rings, inPlace, ok := c.medians(); !ok || rings != 1 || inPlace != 1 {
		t.Fatalf("medians %v %v %v", rings, inPlace, ok)
	}
	c.decided, c.post = true, false
	for range 3 {
		if d := tu.choose(plan.AllGather, false, 1<<20+5, warm); d.post || d.timed || d.settles {
			t.Fatalf("decided class: %+v", d)
		}
	}
	if c.calls != total {
		t.Fatalf("decided class counted: %d calls", c.calls)
	}
}

// TestTunesPost: only the default mode times, only the collectives it
// posts but AlltoAllV, and only blocks that can be posted.
func TestTunesPost(t *testing.T) {
	def := tunables{}
	for _, tc := range []struct {
		k     tunables
		coll  plan.Coll
		bytes int
		want  bool
	}{
		{def, plan.AllGather, 1 << 20, true},
		{def, plan.AlltoAll, 256 << 10, true},
		{def, plan.Broadcast, 4 << 20, true},
		{def, plan.AllGather, 256<<10 - 1, false},
		{def, plan.AlltoAllV, 1 << 20, false},
		{def, plan.AllReduce, 1 << 20, false},
		{tunables{ShmDirect: directAll}, plan.AllGather, 1 << 20, false},
		{tunables{ShmDirect: directNone}, plan.AllGather, 1 << 20, false},
		{tunables{ShmDirectDisable: true}, plan.AllGather, 1 << 20, false},
	} {
		if got := tc.k.tunesPost(tc.coll, tc.bytes); got != tc.want {
			t.Errorf("%+v %v %d: %v, want %v", tc.k, tc.coll, tc.bytes, got, tc.want)
		}
	}
}

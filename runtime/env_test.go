package runtime

import (
	"log/slog"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// TestShmDirectKnob: by default the collectives whose receivers only copy
// (AllGather, Broadcast) post in place and the reductions do not,
// HCCL_SHM_DIRECT=1 makes every one post, =0 none, and
// HCCL_SHM_DIRECT_DISABLE=1 wins over HCCL_SHM_DIRECT.
func TestShmDirectKnob(t *testing.T) {
	for _, tt := range []struct {
		env               map[string]string
		copies, allReduce bool
	}{
		{map[string]string{}, true, false},
		{map[string]string{"HCCL_SHM_DIRECT": "1"}, true, true},
		{map[string]string{"HCCL_SHM_DIRECT": "0"}, false, false},
		{map[string]string{"HCCL_SHM_DIRECT_DISABLE": "1"}, false, false},
		{map[string]string{"HCCL_SHM_DIRECT": "1", "HCCL_SHM_DIRECT_DISABLE": "1"}, false, false},
	} {
		k, err := knobsFromEnv(func(name string) string { return tt.env[name] })
		if err != nil {
			t.Fatalf("%v: %v", tt.env, err)
		}
		m := k.shmDirect()
		for _, c := range []plan.Coll{plan.AllGather, plan.Broadcast} {
			if got := m.posts(c); got != tt.copies {
				t.Errorf("%v: %v posts in place %v, want %v", tt.env, c, got, tt.copies)
			}
		}
		if got := m.posts(plan.AllReduce); got != tt.allReduce {
			t.Errorf("%v: AllReduce posts in place %v, want %v", tt.env, got, tt.allReduce)
		}
	}
	if _, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_DIRECT": "yes"}[name] }); err == nil {
		t.Error("HCCL_SHM_DIRECT=yes accepted")
	}
}

// TestShmSpliceKnob: HCCL_SHM_SPLICE_DISABLE=1 turns the pipes off, =0
// on, and unset leaves them to the probe.
func TestShmSpliceKnob(t *testing.T) {
	for v, want := range map[string]spliceMode{"": spliceProbed, "0": spliceOn, "1": spliceOff} {
		k, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_SPLICE_DISABLE": v}[name] })
		if err != nil || k.ShmSplice != want {
			t.Errorf("HCCL_SHM_SPLICE_DISABLE=%q: %v, %v; want %v", v, k.ShmSplice, err, want)
		}
	}
	if _, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_SPLICE_DISABLE": "yes"}[name] }); err == nil {
		t.Error("HCCL_SHM_SPLICE_DISABLE=yes accepted")
	}
}

// TestPipesOff: the knob decides when set, and nothing is probed where
// nothing is read in place or the host is crowded.
func TestPipesOff(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		k       tunables
		local   int
		crowded bool
		want    bool
	}{
		{tunables{ShmSplice: spliceOff}, 2, false, true},
		{tunables{ShmSplice: spliceOn}, 2, false, false},
		{tunables{ShmSplice: spliceOn}, 256, true, false},
		{tunables{ShmDisable: true}, 2, false, true},
		{tunables{ShmDirect: directNone}, 2, false, true},
		{tunables{}, 1, false, true},
		{tunables{}, 256, true, true},
	} {
		if got := pipesOff(c.k, c.local, c.crowded, log); got != c.want {
			t.Errorf("%+v with %d local ranks: pipes off %v, want %v", c.k, c.local, got, c.want)
		}
	}
}

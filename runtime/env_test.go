package runtime

import (
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// TestShmDirectKnob: by default the collectives whose receivers only copy
// post in place, HCCL_SHM_DIRECT=1 makes every one post, =0 none, and
// HCCL_SHM_DIRECT_DISABLE=1 wins over HCCL_SHM_DIRECT.
func TestShmDirectKnob(t *testing.T) {
	for _, tt := range []struct {
		env                  map[string]string
		allGather, allReduce bool
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
		if got := m.posts(plan.AllGather); got != tt.allGather {
			t.Errorf("%v: AllGather posts in place %v, want %v", tt.env, got, tt.allGather)
		}
		if got := m.posts(plan.AllReduce); got != tt.allReduce {
			t.Errorf("%v: AllReduce posts in place %v, want %v", tt.env, got, tt.allReduce)
		}
	}
	if _, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_DIRECT": "yes"}[name] }); err == nil {
		t.Error("HCCL_SHM_DIRECT=yes accepted")
	}
}

// TestShmSpliceKnob: the pipes are on unless HCCL_SHM_SPLICE_DISABLE=1.
func TestShmSpliceKnob(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "1": true} {
		k, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_SPLICE_DISABLE": v}[name] })
		if err != nil || k.ShmSpliceDisable != want {
			t.Errorf("HCCL_SHM_SPLICE_DISABLE=%q: %v, %v; want %v", v, k.ShmSpliceDisable, err, want)
		}
	}
	if _, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_SPLICE_DISABLE": "yes"}[name] }); err == nil {
		t.Error("HCCL_SHM_SPLICE_DISABLE=yes accepted")
	}
}

package selector

import (
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// TestFromEnv: the variables FromEnv reads and what they set; the
// runtime's select_test.go holds them to what a job's knobs decide.
func TestFromEnv(t *testing.T) {
	var all uint32
	for c := plan.AllReduce; c <= plan.SendRecv; c++ {
		all |= PostedBit(c)
	}
	for _, tt := range []struct {
		env    map[string]string
		noShm  bool
		posted uint32
	}{
		{map[string]string{}, false, DefaultPosted},
		{map[string]string{"HCCL_SHM_DISABLE": "1"}, true, DefaultPosted},
		{map[string]string{"HCCL_SHM_DISABLE": "0"}, false, DefaultPosted},
		{map[string]string{"HCCL_SHM_DIRECT": "1"}, false, all},
		{map[string]string{"HCCL_SHM_DIRECT": "0"}, false, 0},
		{map[string]string{"HCCL_SHM_DIRECT": "1", "HCCL_SHM_DIRECT_DISABLE": "1"}, false, 0},
		{map[string]string{"HCCL_SHM_DIRECT_DISABLE": "0"}, false, DefaultPosted},
	} {
		m, _, err := FromEnv(func(k string) string { return tt.env[k] }, 0)
		if err != nil || m.NoShm != tt.noShm || m.Posted != tt.posted {
			t.Errorf("%v: NoShm %v, Posted %#x, %v; want %v and %#x", tt.env, m.NoShm, m.Posted, err, tt.noShm, tt.posted)
		}
	}
	for _, env := range []map[string]string{
		{"HCCL_SHM_DISABLE": "yes"},
		{"HCCL_SHM_DIRECT": "2"},
		{"HCCL_SHM_DIRECT_DISABLE": "true"},
		{"HCCL_ALGO": "bogus"},
	} {
		if _, _, err := FromEnv(func(k string) string { return env[k] }, 0); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
	m, p, err := FromEnv(func(k string) string { return map[string]string{"HCCL_ALGO": " ring "}[k] }, 0)
	want := DefaultModel()
	want.Scratch = DefaultBuffSize
	if err != nil || !p.Forced(plan.AllReduce) || m != want {
		t.Errorf("HCCL_ALGO=\" ring \": %v, forced %v, model changed %v", err, p.Forced(plan.AllReduce), m != want)
	}
	m, _, err = FromEnv(func(k string) string { return map[string]string{"HCCL_BUFFSIZE": "200"}[k] }, 0)
	if err != nil || m.Scratch != 200<<20 {
		t.Errorf("HCCL_BUFFSIZE=200: scratch %d, %v; want 200 MiB", m.Scratch, err)
	}
}

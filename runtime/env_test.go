package runtime

import "testing"

// TestShmDirectKnob: in-place reads are off unless HCCL_SHM_DIRECT=1, and
// HCCL_SHM_DIRECT_DISABLE=1 wins over it.
func TestShmDirectKnob(t *testing.T) {
	for _, tt := range []struct {
		env    map[string]string
		direct bool
	}{
		{map[string]string{}, false},
		{map[string]string{"HCCL_SHM_DIRECT": "1"}, true},
		{map[string]string{"HCCL_SHM_DIRECT": "0"}, false},
		{map[string]string{"HCCL_SHM_DIRECT": "1", "HCCL_SHM_DIRECT_DISABLE": "1"}, false},
	} {
		k, err := knobsFromEnv(func(name string) string { return tt.env[name] })
		if err != nil {
			t.Fatalf("%v: %v", tt.env, err)
		}
		if got := k.readsDirect(); got != tt.direct {
			t.Errorf("%v: reads in place %v, want %v", tt.env, got, tt.direct)
		}
	}
	if _, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_DIRECT": "yes"}[name] }); err == nil {
		t.Error("HCCL_SHM_DIRECT=yes accepted")
	}
}

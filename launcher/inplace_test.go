package launcher

import (
	"slices"
	"testing"
)

// TestWithInPlaceChoice: HCCL_SHM_DIRECT=0 is added only where in place
// does not pay and the user has not chosen, in the launcher's environment
// or with -x; the machine is not even timed when the user has.
func TestWithInPlaceChoice(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	env := func(name string) func(string) (string, bool) {
		return func(k string) (string, bool) { return "1", k == name }
	}
	for _, tt := range []struct {
		name    string
		exports []string
		lookup  func(string) (string, bool)
		pays    bool
		want    []string
		timed   bool
	}{
		{"pays", []string{"A=1"}, none, true, []string{"A=1"}, true},
		{"slow", []string{"A=1"}, none, false, []string{"A=1", "HCCL_SHM_DIRECT=0"}, true},
		{"user env", nil, env("HCCL_SHM_DIRECT"), false, nil, false},
		{"user env disable", nil, env("HCCL_SHM_DIRECT_DISABLE"), false, nil, false},
		{"-x", []string{"HCCL_SHM_DIRECT=1"}, none, false, []string{"HCCL_SHM_DIRECT=1"}, false},
		{"-x disable", []string{"HCCL_SHM_DIRECT_DISABLE=0"}, none, false, []string{"HCCL_SHM_DIRECT_DISABLE=0"}, false},
		{"prefix only", []string{"HCCL_SHM_DIRECTX=1"}, none, false, []string{"HCCL_SHM_DIRECTX=1", "HCCL_SHM_DIRECT=0"}, true},
	} {
		timed := false
		got := withInPlaceChoice(slices.Clone(tt.exports), tt.lookup, func() bool { timed = true; return tt.pays })
		if !slices.Equal(got, tt.want) || timed != tt.timed {
			t.Errorf("%s: got %q (timed %v), want %q (timed %v)", tt.name, got, timed, tt.want, tt.timed)
		}
	}
}

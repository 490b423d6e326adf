package launcher

import (
	"slices"
	"testing"
)

func TestWithThreads(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  []string
		cpus int
		want string // the GOMAXPROCS entry added, "" for none
	}{
		{"fits", []string{"HCCL_LOCAL_WORLD_SIZE=2"}, 2, ""},
		{"oversubscribed", []string{"HCCL_LOCAL_WORLD_SIZE=4"}, 2, "GOMAXPROCS=1"},
		{"share of a big host", []string{"HCCL_LOCAL_WORLD_SIZE=20"}, 64, ""},
		{"three per core", []string{"HCCL_LOCAL_WORLD_SIZE=96"}, 64, "GOMAXPROCS=1"},
		{"user's choice", []string{"GOMAXPROCS=2", "HCCL_LOCAL_WORLD_SIZE=8"}, 2, ""},
		{"no rank env", []string{"PATH=/bin"}, 2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := withThreads(slices.Clone(tt.env), tt.cpus)
			added := ""
			if len(got) > len(tt.env) {
				added = got[len(got)-1]
			}
			if added != tt.want || !slices.Equal(got[:len(tt.env)], tt.env) {
				t.Errorf("withThreads(%q, %d) = %q, want %q added", tt.env, tt.cpus, got, tt.want)
			}
		})
	}
}

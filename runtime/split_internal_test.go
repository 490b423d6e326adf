package runtime

import (
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// TestSubLayout: a child keeps its ranks' servers, whatever their sizes
// and order (the parent's layout restricted to the members).
func TestSubLayout(t *testing.T) {
	for _, tt := range []struct {
		per     int
		members []int
		want    string
	}{
		{0, []int{0, 1, 2}, "1 server"},
		{3, []int{0, 3}, "1+1"},         // a column of a 2x3 grid on servers of 3
		{3, []int{3, 0}, "1+1"},         // reversed
		{3, []int{0, 1, 2}, "1 server"}, // one server
		{2, []int{0, 1, 4, 5}, "2+2"},   // two of three servers
		{2, []int{0, 4, 1, 5}, "2+2 [0 2] [1 3]"},
		{2, []int{0, 1, 2}, "2+1"},
		{4, []int{1, 2, 5, 6, 9, 10}, "2+2+2"},
	} {
		if got := plan.EvenLayout(12, tt.per).Sub(tt.members).String(); got != tt.want {
			t.Errorf("servers of %d, members %v: child layout %s, want %s", tt.per, tt.members, got, tt.want)
		}
	}
}

func TestChildID(t *testing.T) {
	seen := map[uint32]bool{}
	for parent := range uint32(64) {
		for n := range uint64(64) {
			id := childID(parent, n, 0)
			if id == 0 || id >= 1<<commBits {
				t.Fatalf("childID(%d, %d) = %#x", parent, n, id)
			}
			if id != childID(parent, n, 0) {
				t.Fatal("not deterministic")
			}
			seen[id] = true
		}
	}
	if len(seen) < 64*64-2 {
		t.Errorf("%d distinct ids of %d", len(seen), 64*64)
	}
}

package runtime_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestTopology: the ranks of a job on one host form one server, and Print
// shows them with the link of every pair.
func TestTopology(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []hccl.Option
		link string
	}{{"shm", nil, "shm"}, {"tcp", []hccl.Option{hccl.WithShmDisabled(true)}, "tcp"}} {
		t.Run(tc.name, func(t *testing.T) {
			j := startJob(t, 3, tc.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			top, err := j.comms[1].Topology(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(top.Servers) != 1 || !slices.Equal(top.Servers[0], []int{0, 1, 2}) {
				t.Errorf("Servers %v, want [[0 1 2]]", top.Servers)
			}
			var b strings.Builder
			if err := top.Print(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if !strings.Contains(out, "3 ranks on 1 server") {
				t.Errorf("Print does not say 3 ranks on 1 server:\n%s", out)
			}
			if row := regexp.MustCompile(`(?m)^r0 +X +` + tc.link + ` +` + tc.link + ` `); !row.MatchString(out) {
				t.Errorf("Print lacks the row %q:\n%s", row, out)
			}
		})
	}
}

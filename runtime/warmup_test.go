package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestInitWarmsFirstCall: Init returns with the links of a small job's
// first collectives open (its own first AllReduce opened them), without
// a log line for that call, and the program's first collective is still
// chosen, logged and numbered as the first.
func TestInitWarmsFirstCall(t *testing.T) {
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	const n = 3
	j := startJob(t, n, hccl.WithLogger(logger))
	for r, c := range j.comms {
		if got := len(c.Links()); got != n-1 {
			t.Errorf("rank %d: %d links open after Init, want %d", r, got, n-1)
		}
	}
	if got := strings.Count(log.Take(), "algorithm chosen"); got != 0 {
		t.Errorf("%d choices logged by Init, want none", got)
	}
	// A first call that differs between ranks is named as call #1.
	errs := j.each(func(c *hccl.Comm) error {
		buf := make([]float32, 8+c.Rank()/2)
		return hccl.AllReduce(context.Background(), c, buf, buf, hccl.Sum)
	})
	named := 0
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), "#1") {
			named++
		}
	}
	if named == 0 {
		t.Errorf("no rank's error names the first call #1: %v", errs)
	}
	if got := strings.Count(log.Take(), "algorithm chosen"); got == 0 {
		t.Error("the program's first call was not logged")
	}
}

package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestSetAlgo: each SetAlgo of every rank changes the algorithm of the
// calls that follow (the selector logs each new decision), the results
// stay exact, "" gives the choice back to the selector, and a spec that
// cannot serve is refused without changing anything.
func TestSetAlgo(t *testing.T) {
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	const n = 3
	j := startJob(t, n, hccl.WithLogger(logger), hccl.WithAlgo("allreduce:mesh"))
	ctx := context.Background()
	allReduce := func(c *hccl.Comm) error {
		buf := make([]int32, 7)
		for i := range buf {
			buf[i] = int32(c.Rank() + i)
		}
		if err := hccl.AllReduce(ctx, c, buf, buf, hccl.Sum); err != nil {
			return err
		}
		for i, v := range buf {
			if want := int32(n*i + n*(n-1)/2); v != want {
				return fmt.Errorf("element %d: %d, want %d", i, v, want)
			}
		}
		return nil
	}
	chosen := func(algo string) int { return strings.Count(log.Take(), "algo="+algo+" ") }

	j.must("AllReduce under WithAlgo", allReduce)
	if got := chosen("mesh"); got != n {
		t.Fatalf("WithAlgo(allreduce:mesh): %d ranks chose mesh, want %d", got, n)
	}
	if err := j.comms[0].SetAlgo("allreduce:pat"); err == nil || !strings.Contains(err.Error(), "pat") {
		t.Fatalf("SetAlgo(allreduce:pat) = %v, want an error naming pat", err)
	}
	for _, algo := range []string{"ring", "rhd", "oneshot", "mesh"} {
		j.must("SetAlgo "+algo, func(c *hccl.Comm) error { return c.SetAlgo("allreduce:" + algo) })
		j.must("AllReduce under "+algo, allReduce)
		if got := chosen(algo); got != n {
			t.Errorf("SetAlgo(allreduce:%s): %d ranks chose it, want %d", algo, got, n)
		}
	}
	j.must("SetAlgo to none", func(c *hccl.Comm) error { return c.SetAlgo("") })
	j.must("AllReduce unforced", allReduce)
	if got := strings.Count(log.Take(), "algorithm chosen"); got != n {
		t.Errorf("SetAlgo(\"\"): %d ranks chose anew, want %d", got, n)
	}
}

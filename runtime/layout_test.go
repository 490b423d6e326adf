package runtime_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestUnevenServers: ranks on servers of 2 and 1 ranks are priced as two
// servers (the selector's log says servers=2), forcing mesh, which runs
// within one server, fails every rank's Broadcast with an error naming
// mesh and the servers before anything moves, and hier runs.
func TestUnevenServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	j := newJobServers(t, []int{0, 0, 1}, hccl.WithLogger(log))
	j.t = t
	j.must("broadcast", func(c *hccl.Comm) error {
		buf := []float32{float32(c.Rank()), 2}
		if err := hccl.Broadcast(ctx, c, buf, 2); err != nil {
			return err
		}
		if buf[0] != 2 || buf[1] != 2 {
			t.Errorf("rank %d: broadcast from rank 2 gave %v", c.Rank(), buf)
		}
		return nil
	})
	if out := logs.String(); !strings.Contains(out, "servers=2") || strings.Contains(out, "servers=1") {
		t.Errorf("the selector's log does not say servers=2 alone:\n%s", out)
	}
	j.must("SetAlgo", func(c *hccl.Comm) error { return c.SetAlgo("mesh") })
	for r, err := range j.each(func(c *hccl.Comm) error {
		return hccl.Broadcast(ctx, c, make([]float32, 4), 0)
	}) {
		if err == nil {
			t.Fatalf("rank %d: forced mesh across servers ran", r)
		}
		if r == 0 {
			t.Logf("rank 0: %v", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "mesh runs within one server") || !strings.Contains(msg, "2 servers") {
			t.Errorf("rank %d: %v: want it to name mesh and the 2 servers", r, err)
		}
	}
	j.must("SetAlgo", func(c *hccl.Comm) error { return c.SetAlgo("hier") })
	j.must("allreduce", func(c *hccl.Comm) error {
		buf := []int32{int32(c.Rank()), 1}
		if err := hccl.AllReduce(ctx, c, buf, buf, hccl.Sum); err != nil {
			return err
		}
		if buf[0] != 3 || buf[1] != 3 {
			t.Errorf("rank %d: hier AllReduce gave %v, want [3 3]", c.Rank(), buf)
		}
		return nil
	})
}

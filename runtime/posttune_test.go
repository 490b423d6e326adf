package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestPostTuning: AllGathers of blocks large enough to be posted, called
// often enough to be timed both ways, give exact results throughout; the
// ranks settle the class together (one log line each, the same way on
// every rank), and the calls after it, of another collective too, stay in
// step. HCCL_SHM_DIRECT set by the user times nothing.
func TestPostTuning(t *testing.T) {
	const n, block, calls = 3, 64 << 10, 90 // float32: 256 KiB blocks
	for _, direct := range []string{"", "1"} {
		t.Run("HCCL_SHM_DIRECT="+direct, func(t *testing.T) {
			if direct != "" {
				t.Setenv("HCCL_SHM_DIRECT", direct)
			}
			var log syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
			j := startJob(t, n, hccl.WithLogger(logger))
			ctx := context.Background()
			j.must("AllGather", func(c *hccl.Comm) error {
				send, recv := make([]float32, block), make([]float32, n*block)
				for call := range calls {
					for i := range send {
						send[i] = float32(call*7 + c.Rank()*block + i)
					}
					if err := hccl.AllGather(ctx, c, send, recv); err != nil {
						return fmt.Errorf("call %d: %w", call, err)
					}
					for i, v := range recv {
						if want := float32(call*7 + i); v != want {
							return fmt.Errorf("call %d: element %d is %v, want %v", call, i, v, want)
						}
					}
				}
				return nil
			})
			j.must("AlltoAll after", func(c *hccl.Comm) error {
				send, recv := make([]int32, n*block), make([]int32, n*block)
				for i := range send {
					send[i] = int32(c.Rank()*n*block + i)
				}
				if err := hccl.AlltoAll(ctx, c, send, recv); err != nil {
					return err
				}
				for p := range n {
					for i := range block {
						if got, want := recv[p*block+i], int32(p*n*block+c.Rank()*block+i); got != want {
							return fmt.Errorf("from rank %d, element %d: %d, want %d", p, i, got, want)
						}
					}
				}
				return nil
			})
			lines := regexp.MustCompile(`msg="large shm payloads".*`).FindAllString(log.Take(), -1)
			if direct != "" {
				if len(lines) != 0 {
					t.Fatalf("HCCL_SHM_DIRECT=%s, yet timed: %q", direct, lines)
				}
				return
			}
			if len(lines) != n {
				t.Fatalf("%d ranks settled, want %d: %q", len(lines), n, lines)
			}
			way := regexp.MustCompile(`way=("in place"|rings)`)
			for _, l := range lines {
				if !strings.Contains(l, "coll=AllGather") || !strings.Contains(l, "ranks_timed=3") || way.FindString(l) != way.FindString(lines[0]) {
					t.Errorf("rank's settling %q, first rank's %q", l, lines[0])
				}
			}
			t.Logf("%s", lines[0])
		})
	}
}

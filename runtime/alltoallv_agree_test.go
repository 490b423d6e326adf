package runtime_test

import (
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"testing"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestAlltoAllVOneChoice: in an uneven AlltoAllV every rank chooses the
// same algorithm, whatever its own share: at np 20, with rank 0 sending a
// few hundred bytes and rank 19 over a megabyte, over shm and over TCP.
// Each rank's choice is read from its "algorithm chosen" log line; the
// results are checked exactly.
func TestAlltoAllVOneChoice(t *testing.T) {
	const n = 20
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			var log syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
			j := startJob(t, n, hccl.WithLogger(logger), hccl.WithShmDisabled(tr == "tcp"))
			ctx := ctxFor(t)
			for _, skew := range []float64{1.55, 1.3} {
				// count(r, p): what rank r sends rank p, growing
				// geometrically with r (and a little with p).
				count := func(r, p int) int { return int(4*math.Pow(skew, float64(r))) + (p*7+r)%5 }
				value := func(r, p, i int) int32 { return int32(r<<26 | p<<20 | i) }
				j.must(fmt.Sprintf("AlltoAllV skew %v", skew), func(c *hccl.Comm) error {
					r := c.Rank()
					sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
					var st, rt int
					for p := range n {
						sc[p], sd[p], rc[p], rd[p] = count(r, p), st, count(p, r), rt
						st += sc[p]
						rt += rc[p]
					}
					send, recv := make([]int32, st), make([]int32, rt)
					for p := range n {
						for i := range sc[p] {
							send[sd[p]+i] = value(r, p, i)
						}
					}
					if err := hccl.AlltoAllV(ctx, c, send, sc, sd, recv, rc, rd); err != nil {
						return err
					}
					for p := range n {
						for i := range rc[p] {
							if got, want := recv[rd[p]+i], value(p, r, i); got != want {
								return fmt.Errorf("from rank %d, element %d: %#x, want %#x", p, i, got, want)
							}
						}
					}
					return nil
				})
			}
			chosen := map[string]map[string]bool{} // rank -> algorithms
			for _, m := range regexp.MustCompile(`msg="algorithm chosen" rank=(\d+) coll=AlltoAllV .* algo=(\w+)`).FindAllStringSubmatch(log.Take(), -1) {
				if chosen[m[1]] == nil {
					chosen[m[1]] = map[string]bool{}
				}
				chosen[m[1]][m[2]] = true
			}
			if len(chosen) != n {
				t.Fatalf("%d ranks logged their AlltoAllV choice, want %d: %v", len(chosen), n, chosen)
			}
			all := map[string]bool{}
			for r, algos := range chosen {
				for a := range algos {
					all[a] = true
				}
				if len(algos) != 1 {
					t.Errorf("rank %s chose %v for AlltoAllVs of different sizes", r, algos)
				}
			}
			if len(all) != 1 {
				t.Errorf("the ranks chose %v for one AlltoAllV: want one algorithm (%v)", all, chosen)
			}
			t.Logf("%s: every rank chose %v", tr, all)
		})
	}
}

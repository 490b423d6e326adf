package runtime_test

import (
	"context"
	"fmt"
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestAlltoAllVRepeat: a loop of AlltoAllV calls reuses the last call's
// plan only while the counts and displacements repeat. The test keeps one
// set of count and displacement slices and rewrites them in place between
// calls, as a loop over batches would: same total, other split, then the
// first split again, then the same split twice; every result is checked.
func TestAlltoAllVRepeat(t *testing.T) {
	const n = 3
	j := startJob(t, n)
	ctx := context.Background()
	// splits[k][i][p]: what rank i sends rank p in call k (elements).
	splits := [][n][n]int{
		{{1, 2, 3}, {2, 1, 0}, {3, 3, 1}},
		{{2, 1, 3}, {0, 1, 2}, {1, 3, 3}}, // every rank's total as in 0
		{{1, 2, 3}, {2, 1, 0}, {3, 3, 1}},
		{{1, 2, 3}, {2, 1, 0}, {3, 3, 1}},
	}
	j.must("AlltoAllV loop", func(c *hccl.Comm) error {
		r := c.Rank()
		sendCounts, sdispls := make([]int, n), make([]int, n)
		recvCounts, rdispls := make([]int, n), make([]int, n)
		for k, split := range splits {
			total, rtotal := 0, 0
			for p := 0; p < n; p++ {
				sendCounts[p], sdispls[p] = split[r][p], total
				total += split[r][p]
				recvCounts[p], rdispls[p] = split[p][r], rtotal
				rtotal += split[p][r]
			}
			send := make([]int32, total)
			for p := 0; p < n; p++ {
				for e := 0; e < sendCounts[p]; e++ {
					send[sdispls[p]+e] = int32(1000*k + 100*r + 10*p + e)
				}
			}
			recv := make([]int32, rtotal)
			if err := hccl.AlltoAllV(ctx, c, send, sendCounts, sdispls, recv, recvCounts, rdispls); err != nil {
				return fmt.Errorf("call %d: %w", k, err)
			}
			for p := 0; p < n; p++ {
				for e := 0; e < recvCounts[p]; e++ {
					if got, want := recv[rdispls[p]+e], int32(1000*k+100*p+10*r+e); got != want {
						return fmt.Errorf("call %d: element %d from rank %d is %d, want %d", k, e, p, got, want)
					}
				}
			}
		}
		return nil
	})
}

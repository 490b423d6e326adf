package main

import (
	"context"
	"fmt"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// graphLoop is loop's twin in graph mode: one compiled graph of a large
// AllReduce, a run of small ones that Compile fuses, a Broadcast and the
// verdict's Max AllReduce, replayed and checked until rank 0 says stop,
// so that a rank killed mid-loop dies during a replay.
func graphLoop(ctx context.Context, c *hccl.Comm, cfg config) {
	n, me := c.Size(), c.Rank()
	large := make([]float32, cfg.count)
	small := make([][]int32, 8)
	bcast := make([]float64, 1000)
	flag := make([]int32, 1)
	g := hccl.NewGraph(c)
	must := func(err error) {
		if err != nil {
			fail(c, err)
		}
	}
	must(hccl.GraphAllReduce(g, large, large, hccl.Sum))
	for k := range small {
		small[k] = make([]int32, 100+k)
		must(hccl.GraphAllReduce(g, small[k], small[k], hccl.Sum))
	}
	must(hccl.GraphBroadcast(g, bcast, n-1))
	must(hccl.GraphAllReduce(g, flag, flag, hccl.Max))
	exe, err := g.Compile(ctx)
	must(err)
	defer exe.Close()
	start := time.Now()
	for i := 0; ; i++ {
		for k := range large {
			large[k] = float32((me+1)*(k%7+1) + i%5)
		}
		for k, s := range small {
			for e := range s {
				s[e] = int32(me + k + e + i)
			}
		}
		for k := range bcast {
			bcast[k] = float64(me*k + i)
		}
		flag[0] = 0
		if me == 0 && cfg.dur > 0 && time.Since(start) >= cfg.dur {
			flag[0] = 1
		}
		must(exe.Run(ctx))
		for k, v := range large {
			if want := float32(n*(n+1)/2*(k%7+1) + n*(i%5)); v != want {
				wrong(c, "graph replay #%d: large element %d = %v, want %v", i, k, v, want)
			}
		}
		for k, s := range small {
			for e, v := range s {
				if want := int32(n*(n-1)/2 + n*(k+e+i)); v != want {
					wrong(c, "graph replay #%d: small %d element %d = %v, want %v", i, k, e, v, want)
				}
			}
		}
		for k, v := range bcast {
			if want := float64((n-1)*k + i); v != want {
				wrong(c, "graph replay #%d: broadcast element %d = %v, want %v", i, k, v, want)
			}
		}
		if flag[0] == 1 {
			fmt.Printf("rank %d done iters=%d\n", me, i+1)
			return
		}
	}
}

package main

import (
	"context"
	"fmt"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// loop runs checked AllReduces until rank 0 says stop. Every 16 calls a
// one-element Max AllReduce carries rank 0's verdict, so that every rank
// runs the same number of calls.
func loop(ctx context.Context, c *hccl.Comm, cfg config) {
	buf := make([]float32, cfg.count)
	flag := make([]int32, 1)
	start := time.Now()
	n := c.Size()
	for i := 0; ; i++ {
		for k := range buf {
			buf[k] = float32((c.Rank()+1)*(k%7+1) + i%5)
		}
		if err := hccl.AllReduce(ctx, c, buf, buf, hccl.Sum); err != nil {
			fail(c, err)
		}
		for k, v := range buf {
			// sum over r of (r+1)*(k%7+1) + i%5
			want := float32(n*(n+1)/2*(k%7+1) + n*(i%5))
			if v != want {
				wrong(c, "AllReduce #%d element %d = %v, want %v", i, k, v, want)
			}
		}
		if i%16 != 15 {
			continue
		}
		flag[0] = 0
		if c.Rank() == 0 && cfg.dur > 0 && time.Since(start) >= cfg.dur {
			flag[0] = 1
		}
		if err := hccl.AllReduce(ctx, c, flag, flag, hccl.Max); err != nil {
			fail(c, err)
		}
		if flag[0] == 1 {
			fmt.Printf("rank %d done iters=%d\n", c.Rank(), i+1)
			return
		}
	}
}

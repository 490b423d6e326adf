package main

import (
	"context"
	"fmt"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// mismatch runs three correct AllReduces, then rank cfg.odd calls
// differently from the others (what cfg.what says). A rank whose call
// returns nil says so and goes on to a Barrier, which must fail: nobody may
// finish the job silently.
func mismatch(ctx context.Context, c *hccl.Comm, cfg config) {
	for range 3 {
		b := make([]float32, 64)
		if err := hccl.AllReduce(ctx, c, b, b, hccl.Sum); err != nil {
			fail(c, err)
		}
	}
	odd := c.Rank() == cfg.odd
	var err error
	switch cfg.what {
	case "collective":
		if odd {
			err = hccl.AllGather(ctx, c, make([]float32, 8), make([]float32, 8*c.Size()))
		} else {
			b := make([]float32, 8)
			err = hccl.AllReduce(ctx, c, b, b, hccl.Sum)
		}
	case "count":
		n := 1000
		if odd {
			n = 1001
		}
		b := make([]float32, n)
		err = hccl.AllReduce(ctx, c, b, b, hccl.Sum)
	case "dtype":
		if odd {
			b := make([]int32, 256)
			err = hccl.AllReduce(ctx, c, b, b, hccl.Sum)
		} else {
			b := make([]float32, 256)
			err = hccl.AllReduce(ctx, c, b, b, hccl.Sum)
		}
	case "op":
		op := hccl.Sum
		if odd {
			op = hccl.Max
		}
		b := make([]float32, 256)
		err = hccl.AllReduce(ctx, c, b, b, op)
	case "root":
		root := 0
		if odd {
			root = cfg.odd
		}
		err = hccl.Broadcast(ctx, c, make([]float32, 256), root)
	default:
		err = fmt.Errorf("unknown -what %q", cfg.what)
	}
	if err != nil {
		fail(c, err)
	}
	fmt.Printf("rank %d mismatched call returned nil\n", c.Rank())
	if err := c.Barrier(ctx); err != nil {
		fail(c, err)
	}
	fmt.Printf("rank %d done (the mismatch went unnoticed)\n", c.Rank())
}

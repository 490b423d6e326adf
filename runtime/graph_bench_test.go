package runtime_test

import (
	"context"
	"fmt"
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// BenchmarkGraphStep is the gradient exchange of a training step, 64
// AllReduces of 16 KiB and 4 of 4 MiB (float32, Sum, in place), made one
// by one ("calls") and as one compiled graph ("graph"), between ranks of
// this process over shared memory (docs/performance.md#graph-mode).
func BenchmarkGraphStep(b *testing.B) {
	for _, n := range []int{2, 4} {
		for _, mode := range []string{"calls", "graph"} {
			b.Run(fmt.Sprintf("np%d/%s", n, mode), func(b *testing.B) {
				benchGraphStep(b, n, mode == "graph")
			})
		}
	}
}

func benchGraphStep(b *testing.B, n int, graph bool) {
	j := startJobB(b, n)
	ctx := context.Background()
	sizes := make([]int, 0, 68)
	for range 64 {
		sizes = append(sizes, 16<<10/4)
	}
	for range 4 {
		sizes = append(sizes, 4<<20/4)
	}
	steps := make([]func() error, n)
	for r, c := range j.comms {
		bufs := make([][]float32, len(sizes))
		for k, s := range sizes {
			bufs[k] = make([]float32, s)
		}
		if !graph {
			steps[r] = func() error {
				for _, buf := range bufs {
					if err := hccl.AllReduce(ctx, c, buf, buf, hccl.Sum); err != nil {
						return err
					}
				}
				return nil
			}
			continue
		}
		g := hccl.NewGraph(c)
		for _, buf := range bufs {
			if err := hccl.GraphAllReduce(g, buf, buf, hccl.Sum); err != nil {
				b.Fatal(err)
			}
		}
		// Compiled on the first run, which every rank makes at once.
		var exe *hccl.Executable
		b.Cleanup(func() {
			if exe != nil {
				exe.Close()
			}
		})
		steps[r] = func() error {
			if exe == nil {
				var err error
				if exe, err = g.Compile(ctx); err != nil {
					return err
				}
			}
			return exe.Run(ctx)
		}
	}
	run := func(iters int) {
		errs := j.each(func(c *hccl.Comm) error {
			for range iters {
				if err := steps[c.Rank()](); err != nil {
					return err
				}
			}
			return nil
		})
		for r, err := range errs {
			if err != nil {
				b.Fatalf("rank %d: %v", r, err)
			}
		}
	}
	run(3) // compiles, warms the links and plans
	b.ResetTimer()
	run(b.N)
}

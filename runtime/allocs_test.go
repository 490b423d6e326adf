package runtime_test

import (
	"context"
	"fmt"
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestSteadyStateAllocations: once a communicator has run a call, running
// it again allocates nothing, on any rank, over shared memory and TCP.
// The ranks are goroutines that wait for a signal, so that the measured
// function does not start goroutines itself; testing.AllocsPerRun counts
// the allocations of the whole process.
func TestSteadyStateAllocations(t *testing.T) {
	for _, tr := range []struct {
		name string
		opts []hccl.Option
	}{{"shm", nil}, {"tcp", []hccl.Option{hccl.WithShmDisabled(true)}}} {
		for _, size := range []int{2, 64 << 10} { // elements: one segment, and several
			t.Run(fmt.Sprintf("%s/%d", tr.name, size), func(t *testing.T) {
				const n = 3
				j := startJob(t, n, tr.opts...)
				ctx := context.Background()
				bufs := make([][]float32, n)
				calls := map[string]func(c *hccl.Comm, b []float32) error{
					"AllReduce": func(c *hccl.Comm, b []float32) error { return hccl.AllReduce(ctx, c, b, b, hccl.Sum) },
					"Broadcast": func(c *hccl.Comm, b []float32) error { return hccl.Broadcast(ctx, c, b, 1) },
				}
				for name, call := range calls {
					start := make([]chan struct{}, n)
					done := make(chan error, n)
					for r, c := range j.comms {
						bufs[r] = make([]float32, size)
						start[r] = make(chan struct{})
						go func() {
							for range start[r] {
								done <- call(c, bufs[r])
							}
						}()
					}
					once := func() {
						for r := range n {
							start[r] <- struct{}{}
						}
						for range n {
							if err := <-done; err != nil {
								t.Error(err)
							}
						}
					}
					once() // links, plans, staging, workers
					once()
					allocs := testing.AllocsPerRun(20, once)
					for r := range n {
						close(start[r])
					}
					if allocs > 0 {
						t.Errorf("%s: %.1f allocations per call on %d ranks", name, allocs, n)
					}
				}
			})
		}
	}
}

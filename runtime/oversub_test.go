package runtime_test

import (
	"context"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestOversubscribed runs 8 ranks on this machine's 2 cores, AllReduce
// loops of small messages over shared memory: every rank must make
// progress although most of them are always waiting. Waiting ranks spin
// only briefly and then sleep on a futex, so they leave the cores to the
// ranks that have work. The test asserts completion and reports the median
// latency and the CPU time per call; speed is the benchmarks' business.
func TestOversubscribed(t *testing.T) {
	const ranks, iters = 8, 300
	j := startJob(t, ranks)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	lat := make([][]time.Duration, ranks)
	cpu0 := cpuTime()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, ranks)
	for r, c := range j.comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := []float32{1, 2}
			for range iters {
				t0 := time.Now()
				if err := hccl.AllReduce(ctx, c, b, b, hccl.Max); err != nil {
					errs[r] = err
					return
				}
				lat[r] = append(lat[r], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	wall, cpu := time.Since(start), cpuTime()-cpu0
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	t.Logf("%d ranks x %d AllReduce(8 B): wall %v, median %v, p99 %v; CPU %v (%.2f cores), %v per call per rank",
		ranks, iters, wall.Round(time.Millisecond), all[len(all)/2], all[len(all)*99/100],
		cpu.Round(time.Millisecond), cpu.Seconds()/wall.Seconds(), cpu/time.Duration(ranks*iters))
}

// cpuTime is the process's user plus system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

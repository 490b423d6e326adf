// Command channels measures AllReduce with different channel counts side
// by side in one job: every size is timed in rounds, each round running
// every channel count in turn (forced with Comm.SetChannels), the order
// rotating from round to round, so that a shared machine's changes of
// speed hit the counts alike. Rank 0 prints, per size and count, the
// median over the rounds of each round's mean (the slowest rank's), the
// bus bandwidth (nccl-tests' 2(n-1)/n) and the ratio to the first count.
// Every count's result is checked exactly once.
//
//	hcclrun -np 2 channels -sizes 16M,64M -channels 1,2,4
//	hcclrun --hostfile hosts channels -sizes 16M,64M -channels 1,2,4
//
// docs/performance.md#channels has its figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "channels:", err)
		os.Exit(1)
	}
}

func run() error {
	sizes := flag.String("sizes", "16M,64M", "AllReduce sizes in bytes (K/M suffixes)")
	chans := flag.String("channels", "1,2,4", "channel counts to compare")
	rounds := flag.Int("rounds", 7, "rounds per size")
	iters := flag.Int("iters", 5, "timed calls per count and round")
	warm := flag.Int("warmup", 2, "untimed calls per count before the rounds")
	flag.Parse()
	var bytes []int64
	for _, s := range strings.Split(*sizes, ",") {
		n, err := selector.ParseBytes(s)
		if err != nil {
			return err
		}
		bytes = append(bytes, n)
	}
	var counts []int
	for _, s := range strings.Split(*chans, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("-channels: %w", err)
		}
		counts = append(counts, n)
	}
	ctx := context.Background()
	comm, err := hccl.Init(ctx)
	if err != nil {
		return err
	}
	defer comm.Close()
	n := comm.Size()
	if comm.Rank() == 0 {
		fmt.Printf("# AllReduce float32 sum, %d ranks, %d rounds of %d calls per count, counts %v\n", n, *rounds, *iters, counts)
	}
	for _, b := range bytes {
		count := int(b / 4)
		send, recv := make([]float32, count), make([]float32, count)
		for i := range send {
			send[i] = float32((comm.Rank() + i) % 7)
		}
		for _, nc := range counts {
			if err := comm.SetChannels(nc, nc); err != nil {
				return err
			}
			for range *warm {
				if err := hccl.AllReduce(ctx, comm, send, recv, hccl.Sum); err != nil {
					return err
				}
			}
			for i, v := range recv {
				want := float32(0)
				for r := range n {
					want += float32((r + i) % 7)
				}
				if v != want {
					return fmt.Errorf("%d channels: element %d is %v, want %v", nc, i, v, want)
				}
			}
		}
		samples := make([][]float64, len(counts))
		for round := range *rounds {
			for k := range counts {
				c := (k + round) % len(counts)
				if err := comm.SetChannels(counts[c], counts[c]); err != nil {
					return err
				}
				if err := comm.Barrier(ctx); err != nil {
					return err
				}
				start := time.Now()
				for range *iters {
					if err := hccl.AllReduce(ctx, comm, send, recv, hccl.Sum); err != nil {
						return err
					}
				}
				mean := []float64{time.Since(start).Seconds() / float64(*iters)}
				if err := hccl.AllReduce(ctx, comm, mean, mean, hccl.Max); err != nil {
					return err
				}
				samples[c] = append(samples[c], mean[0])
			}
		}
		if comm.Rank() != 0 {
			continue
		}
		var base float64
		for c, nc := range counts {
			s := slices.Clone(samples[c])
			slices.Sort(s)
			med := s[len(s)/2]
			if c == 0 {
				base = med
			}
			bus := float64(b) / med * 2 * float64(n-1) / float64(n) / 1e9
			fmt.Printf("size %s channels %d median %.2f ms busbw %.2f GB/s ratio %.2f (rounds %s)\n",
				selector.FormatBytes(b), nc, med*1e3, bus, base/med, ms(samples[c]))
		}
	}
	return comm.SetChannels(0, 0)
}

func ms(s []float64) string {
	var out []string
	for _, v := range s {
		out = append(out, fmt.Sprintf("%.1f", v*1e3))
	}
	return strings.Join(out, " ")
}

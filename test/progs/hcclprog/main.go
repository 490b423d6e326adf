// Command hcclprog is a rank program of the launcher's tests that uses the
// real runtime: it joins the job (Init), meets the others (Barrier), runs
// AllReduce in a loop, and closes. Flags:
//
//	-iters N     AllReduce calls (default 0)
//	-bytes B     size of each AllReduce, float32 elements of B/4
//	-die R       rank R exits with code 3 after Init (the others go on)
//	-report      rank 0 prints the AllReduce time and busbw
//	-split N     then splits the job into N communicators (color rank%N)
//	             and runs the -iters AllReduces on each rank's
//
// Each rank prints "rank R: <error>" and exits 1 when a call fails, so that a
// test can see which ranks saw the abort and why.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

func main() {
	iters := flag.Int("iters", 0, "AllReduce calls")
	size := flag.Int("bytes", 4, "bytes per AllReduce")
	die := flag.Int("die", -1, "rank that exits with code 3 after Init")
	report := flag.Bool("report", false, "rank 0 prints time and busbw")
	split := flag.Int("split", 0, "then split into N communicators and run the AllReduces on each")
	flag.Parse()

	ctx := context.Background()
	start := time.Now()
	comm, err := hccl.Init(ctx)
	if err != nil {
		fmt.Printf("rank %s: %v\n", os.Getenv("HCCL_RANK"), err)
		os.Exit(1)
	}
	check := func(err error) {
		if err != nil {
			fmt.Printf("rank %d: %v\n", comm.Rank(), err)
			os.Exit(1)
		}
	}
	check(comm.Barrier(ctx))
	if comm.Rank() == *die {
		os.Exit(3)
	}
	buf := make([]float32, *size/4)
	t0 := time.Now()
	for i := 0; i < *iters; i++ {
		check(hccl.AllReduce(ctx, comm, buf, buf, hccl.Sum))
	}
	el := time.Since(t0)
	if *report && comm.Rank() == 0 && *iters > 0 {
		n := float64(comm.Size())
		per := el.Seconds() / float64(*iters)
		alg := float64(*size) / per / 1e9
		fmt.Printf("allreduce %d bytes np=%d: %.1f us, algbw %.3f GB/s, busbw %.3f GB/s\n",
			*size, comm.Size(), per*1e6, alg, alg*2*(n-1)/n)
	}
	if *split > 0 {
		child, err := comm.Split(ctx, comm.Rank()%*split, comm.Rank())
		check(err)
		for i := 0; i < *iters; i++ {
			check(hccl.AllReduce(ctx, child, buf, buf, hccl.Sum))
		}
		check(child.Close())
	}
	check(comm.Close())
	if comm.Rank() == 0 {
		fmt.Printf("rank 0: init+barrier+close in %v\n", time.Since(start).Round(time.Millisecond))
	}
}

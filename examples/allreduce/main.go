// Command allreduce is the smallest hcclrun program: every rank contributes
// rank+1 and prints the sum, which is the same on every rank:
// n(n+1)/2 for n ranks.
package main

import (
	"context"
	"fmt"
	"os"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "allreduce:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	comm, err := hccl.Init(ctx)
	if err != nil {
		return err
	}
	defer comm.Close()
	v := []float64{float64(comm.Rank() + 1)}
	if err := hccl.AllReduce(ctx, comm, v, v, hccl.Sum); err != nil {
		return err
	}
	fmt.Printf("rank %d of %d: sum = %g\n", comm.Rank(), comm.Size(), v[0])
	return comm.Close()
}

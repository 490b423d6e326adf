// Command initbarrier is the startup-time probe of bench/compare: it joins
// the job, meets every rank at one Barrier and leaves, so that the wall time
// of `hcclrun -np 2 initbarrier` is what hcclrun and the runtime take to
// start a job, and nothing else. bench/mpi/initbarrier.c is its MPI twin.
package main

import (
	"context"
	"fmt"
	"os"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "initbarrier:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	comm, err := hccl.Init(ctx)
	if err != nil {
		return err
	}
	if err := comm.Barrier(ctx); err != nil {
		comm.Close()
		return err
	}
	return comm.Close()
}

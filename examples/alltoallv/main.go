// Command alltoallv follows HCCL's 07_alltoallv sample. Part one: every
// rank sends its own rank id to every peer (counts 1, displacements 0, 1,
// 2, ...), so after AlltoAllV every rank holds [0 1 2 ... n-1]. Part two
// uses uneven counts: rank i sends i+1 copies of its id to every peer, so
// rank j receives i+1 copies of i from each i, laid out in rank order.
package main

import (
	"context"
	"fmt"
	"os"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "alltoallv:", err)
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
	n, me := comm.Size(), comm.Rank()

	// Part one: one element to each peer.
	send := make([]int32, n)
	recv := make([]int32, n)
	counts := make([]int, n)
	displs := make([]int, n)
	for i := range n {
		send[i] = int32(me)
		counts[i] = 1
		displs[i] = i
	}
	if err := hccl.AlltoAllV(ctx, comm, send, counts, displs, recv, counts, displs); err != nil {
		return err
	}
	fmt.Printf("rank %d: %v\n", me, recv)

	// Part two: rank i sends i+1 elements to every peer.
	sendCounts := make([]int, n)
	sdispls := make([]int, n)
	recvCounts := make([]int, n)
	rdispls := make([]int, n)
	send = make([]int32, 0, n*(me+1))
	for j := range n {
		sendCounts[j] = me + 1
		sdispls[j] = j * (me + 1)
		for range me + 1 {
			send = append(send, int32(me))
		}
	}
	total := 0
	for i := range n {
		recvCounts[i] = i + 1
		rdispls[i] = total
		total += i + 1
	}
	recv = make([]int32, total)
	if err := hccl.AlltoAllV(ctx, comm, send, sendCounts, sdispls, recv, recvCounts, rdispls); err != nil {
		return err
	}
	fmt.Printf("rank %d uneven: %v\n", me, recv)
	return comm.Close()
}

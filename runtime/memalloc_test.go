package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestMemAllocCollectives: every collective whose large payloads come
// from MemAlloc memory (which a peer copies out of its own mapping) gives
// exact results, at np 3 and block sizes on both sides of the smallest
// payload handed over in place, odd ones included, on repeated calls.
func TestMemAllocCollectives(t *testing.T) {
	const n = 3
	j := startJob(t, n)
	ctx := context.Background()
	for _, block := range []int{1000, 64<<10 + 3, 300 << 10} { // int32: 4 KB, 256 KiB + 12, 1.2 MB
		j.must(fmt.Sprintf("blocks of %d", block), func(c *hccl.Comm) error {
			rank := c.Rank()
			send, err := hccl.MemAlloc[int32](n * block)
			if err != nil {
				return err
			}
			defer hccl.MemFree(send)
			recv, err := hccl.MemAlloc[int32](n * block)
			if err != nil {
				return err
			}
			defer hccl.MemFree(recv)
			at := func(r, i, call int) int32 { return int32(r*1_000_003 + i*7 + call) }
			check := func(what string, got []int32, want func(i int) int32) error {
				for i, v := range got {
					if w := want(i); v != w {
						return fmt.Errorf("%s: element %d is %d, want %d", what, i, v, w)
					}
				}
				return nil
			}
			for call := range 3 {
				for i := range send {
					send[i] = at(rank, i, call)
				}
				if err := hccl.AllGather(ctx, c, send[:block], recv); err != nil {
					return err
				}
				if err := check("AllGather", recv, func(i int) int32 { return at(i/block, i%block, call) }); err != nil {
					return err
				}
				if err := hccl.AlltoAll(ctx, c, send, recv); err != nil {
					return err
				}
				if err := check("AlltoAll", recv, func(i int) int32 { return at(i/block, rank*block+i%block, call) }); err != nil {
					return err
				}
				counts, displs := make([]int, n), make([]int, n)
				for p := range n {
					counts[p], displs[p] = block, p*block
				}
				if err := hccl.AlltoAllV(ctx, c, send, counts, displs, recv, counts, displs); err != nil {
					return err
				}
				if err := check("AlltoAllV", recv, func(i int) int32 { return at(i/block, rank*block+i%block, call) }); err != nil {
					return err
				}
				if err := hccl.AllReduce(ctx, c, send, recv, hccl.Sum); err != nil {
					return err
				}
				sum := func(i int) int32 { return at(0, i, call) + at(1, i, call) + at(2, i, call) }
				if err := check("AllReduce", recv, sum); err != nil {
					return err
				}
				if err := hccl.ReduceScatter(ctx, c, send, recv[:block], hccl.Sum); err != nil {
					return err
				}
				if err := check("ReduceScatter", recv[:block], func(i int) int32 { return sum(rank*block + i) }); err != nil {
					return err
				}
				if err := hccl.Reduce(ctx, c, send, recv, hccl.Sum, 1); err != nil {
					return err
				}
				if rank == 1 {
					if err := check("Reduce", recv, sum); err != nil {
						return err
					}
				}
				if err := hccl.Broadcast(ctx, c, send, 2); err != nil {
					return err
				}
				if err := check("Broadcast", send, func(i int) int32 { return at(2, i, call) }); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// TestMemAllocErrors: MemAlloc of nothing is an empty slice and of a
// negative count an error; MemFree refuses memory MemAlloc did not return.
func TestMemAllocErrors(t *testing.T) {
	if b, err := hccl.MemAlloc[float32](0); err != nil || len(b) != 0 {
		t.Fatalf("MemAlloc(0): %d elements, %v", len(b), err)
	}
	if _, err := hccl.MemAlloc[float32](-1); !errors.Is(err, hccl.ErrInvalidArgument) {
		t.Fatalf("MemAlloc(-1): %v", err)
	}
	if err := hccl.MemFree(make([]float64, 10)); !errors.Is(err, hccl.ErrInvalidArgument) {
		t.Fatalf("MemFree of a Go slice: %v", err)
	}
	b, err := hccl.MemAlloc[hccl.BFloat16](1001)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("element %d of fresh memory is %v", i, v)
		}
	}
	if err := hccl.MemFree(b[1:]); !errors.Is(err, hccl.ErrInvalidArgument) {
		t.Fatalf("MemFree from the middle: %v", err)
	}
	if err := hccl.MemFree(b); err != nil {
		t.Fatal(err)
	}
	if err := hccl.MemFree(b); !errors.Is(err, hccl.ErrInvalidArgument) {
		t.Fatalf("MemFree twice: %v", err)
	}
}

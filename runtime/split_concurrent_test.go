package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestSplitGridAllAtOnce runs every collective of a 2x3 grid's rows, its
// columns and the parent at the same moment: each rank calls the three
// from three goroutines of its own, 18 in all, which return their errors
// rather than fail the test from another goroutine. TestSplitGrid's
// groups are parallel subtests, which -parallel (GOMAXPROCS, 2 on small
// hosts) runs a few at a time. Over shm and TCP.
func TestSplitGridAllAtOnce(t *testing.T) {
	for _, tr := range splitTransports {
		t.Run(tr.name, func(t *testing.T) {
			j := startJob(t, 6, tr.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			rows := splitAll(t, ctx, j.comms, func(r int) int { return r / 3 }, func(r int) int { return r })
			cols := splitAll(t, ctx, j.comms, func(r int) int { return r % 3 }, func(r int) int { return r })
			errs := make([]error, 3*6)
			var wg sync.WaitGroup
			for r := range 6 {
				for i, c := range []*hccl.Comm{j.comms[r], rows[r], cols[r]} {
					wg.Go(func() {
						if err := runChecks(ctx, c); err != nil {
							errs[3*r+i] = fmt.Errorf("rank %d, %s (rank %d of %d): %w", r, []string{"parent", "row", "column"}[i], c.Rank(), c.Size(), err)
						}
					})
				}
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSplitIDsTaken: a Split whose first candidate ids are some
// communicator's on one rank takes the next free one on every rank; when
// all are taken, it fails alike on every rank and the next Split works.
func TestSplitIDsTaken(t *testing.T) {
	j := startJob(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	release, err := hccl.HoldSplitCandidates(j.comms[2], 3)
	if err != nil {
		t.Fatal(err)
	}
	kids := splitAll(t, ctx, j.comms, func(r int) int { return r % 2 }, func(r int) int { return 0 })
	release()
	for _, g := range groups(t, kids, func(r int) int { return r % 2 }) {
		checkType[int32](t, g, []int{7, 1000})
	}

	release, err = hccl.HoldSplitCandidates(j.comms[1], 16)
	if err != nil {
		t.Fatal(err)
	}
	for r, err := range j.each(func(c *hccl.Comm) error {
		k, err := c.Split(ctx, 0, 0)
		if k != nil {
			k.Close()
		}
		return err
	}) {
		if err == nil || !errors.As(err, new(*hccl.OpError)) || !strings.Contains(err.Error(), "all in use on some rank") {
			t.Errorf("rank %d: %v, want the Split to fail saying its ids are in use", r, err)
		}
	}
	release()
	kids = splitAll(t, ctx, j.comms, func(int) int { return 0 }, func(int) int { return 0 })
	checkType[float32](t, groups(t, kids, func(int) int { return 0 })[0], []int{7})
}

// commCheck is one rank's part of a check of every collective on a
// communicator; every rank of it runs the same one.
type commCheck func(ctx context.Context, c *hccl.Comm) error

// checkEvery runs every collective of T on c at each count, as the
// matrix does, returning the first wrong result or error.
func checkEvery[T hccl.Element](counts []int) commCheck {
	return func(ctx context.Context, c *hccl.Comm) error {
		for _, count := range counts {
			if err := checkCount[T](ctx, c, count); err != nil {
				var zero T
				return fmt.Errorf("%T count %d: %w", zero, count, err)
			}
		}
		return nil
	}
}

func checkCount[T hccl.Element](ctx context.Context, c *hccl.Comm, count int) error {
	n, me := c.Size(), c.Rank()
	for _, op := range opsFor[T]() {
		want := make([]T, n*count)
		for i := range want {
			want[i] = reduced[T](op, n, i)
		}
		for _, inPlace := range []bool{false, true} {
			send := fill[T](op, me, count)
			recv := send
			if !inPlace {
				recv = make([]T, count)
			}
			if err := hccl.AllReduce(ctx, c, send, recv, op); err != nil {
				return err
			}
			if err := sameBits(recv, want[:count]); err != nil {
				return fmt.Errorf("AllReduce %v inplace=%v: %w", op, inPlace, err)
			}
			send = fill[T](op, me, n*count)
			recv = send[me*count : (me+1)*count]
			if !inPlace {
				recv = make([]T, count)
			}
			if err := hccl.ReduceScatter(ctx, c, send, recv, op); err != nil {
				return err
			}
			if err := sameBits(recv, want[me*count:(me+1)*count]); err != nil {
				return fmt.Errorf("ReduceScatter %v inplace=%v: %w", op, inPlace, err)
			}
		}
		for _, root := range rootsFor(n) {
			send := fill[T](op, me, count)
			var recv []T
			if me == root {
				recv = make([]T, count)
			}
			if err := hccl.Reduce(ctx, c, send, recv, op, root); err != nil {
				return err
			}
			if me == root {
				if err := sameBits(recv, want[:count]); err != nil {
					return fmt.Errorf("Reduce %v root %d: %w", op, root, err)
				}
			}
		}
	}
	recv := make([]T, n*count)
	if err := hccl.AllGather(ctx, c, fill[T](hccl.Sum, me, count), recv); err != nil {
		return err
	}
	var want []T
	for r := range n {
		want = append(want, fill[T](hccl.Sum, r, count)...)
	}
	if err := sameBits(recv, want); err != nil {
		return fmt.Errorf("AllGather: %w", err)
	}
	for _, root := range rootsFor(n) {
		buf := make([]T, count)
		if me == root {
			buf = fill[T](hccl.Sum, root, count)
		}
		if err := hccl.Broadcast(ctx, c, buf, root); err != nil {
			return err
		}
		if err := sameBits(buf, fill[T](hccl.Sum, root, count)); err != nil {
			return fmt.Errorf("Broadcast root %d: %w", root, err)
		}
	}
	recv = make([]T, n*count)
	if err := hccl.AlltoAll(ctx, c, fill[T](hccl.Sum, me, n*count), recv); err != nil {
		return err
	}
	want = want[:0]
	for r := range n {
		want = append(want, fill[T](hccl.Sum, r, n*count)[me*count:(me+1)*count]...)
	}
	if err := sameBits(recv, want); err != nil {
		return fmt.Errorf("AlltoAll: %w", err)
	}
	// AlltoAllV: rank i sends vcount(i, j) elements to rank j.
	vcount := func(i, j int) int { return (count*(1+(i+2*j)%3) + i + j) / 3 }
	sendCounts, sdispls := make([]int, n), make([]int, n)
	recvCounts, rdispls := make([]int, n), make([]int, n)
	total := 0
	for k := range n {
		sendCounts[k], sdispls[k] = vcount(me, k), total
		total += sendCounts[k]
	}
	vsend := fill[T](hccl.Sum, me, total)
	total = 0
	for i := range n {
		recvCounts[i], rdispls[i] = vcount(i, me), total
		total += recvCounts[i]
	}
	vrecv := make([]T, total)
	if err := hccl.AlltoAllV(ctx, c, vsend, sendCounts, sdispls, vrecv, recvCounts, rdispls); err != nil {
		return err
	}
	vwant := make([]T, total)
	for i := range n {
		off := 0
		for k := range me {
			off += vcount(i, k)
		}
		copy(vwant[rdispls[i]:], fill[T](hccl.Sum, i, off+vcount(i, me))[off:])
	}
	if err := sameBits(vrecv, vwant); err != nil {
		return fmt.Errorf("AlltoAllV: %w", err)
	}
	// Send and Recv around the ring: even ranks send first, odd ones
	// receive first, so that rank 1's receive breaks the cycle.
	if n > 1 {
		next, prev := (me+1)%n, (me+n-1)%n
		got := make([]T, count)
		send := func() error { return hccl.Send(ctx, c, fill[T](hccl.Sum, me, count), next) }
		recv := func() error { return hccl.Recv(ctx, c, got, prev) }
		first, second := send, recv
		if me%2 == 1 {
			first, second = recv, send
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		if err := sameBits(got, fill[T](hccl.Sum, prev, count)); err != nil {
			return fmt.Errorf("Recv from %d: %w", prev, err)
		}
	}
	return c.Barrier(ctx)
}

// gridChecks are TestSplitGridAllAtOnce's element types and counts the grid runs: an integer
// and a 16-bit float, and float64, through the algorithms' small and
// large sizes.
var gridChecks = []commCheck{
	checkEvery[int32]([]int{0, 1, 7, 1000, 70001}),
	checkEvery[hccl.Float16]([]int{1, 1000}),
	checkEvery[float64]([]int{7, 40000}),
}

func runChecks(ctx context.Context, c *hccl.Comm) error {
	for _, check := range gridChecks {
		if err := check(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// guard is the value of every receive element outside the receive ranges;
// no payload takes it.
const guard = -7777

// a2avLayout is one rank's AlltoAllV arguments: count(i, j) elements from
// rank i to rank j, receive blocks separated by gap guard elements.
type a2avLayout struct {
	send, recv                               []float32
	sendCounts, sdispls, recvCounts, rdispls []int
}

func newLayout(rank, n, gap int, count func(from, to int) int) *a2avLayout {
	l := &a2avLayout{sendCounts: make([]int, n), sdispls: make([]int, n), recvCounts: make([]int, n), rdispls: make([]int, n)}
	off := 0
	for j := range n {
		l.sdispls[j], l.sendCounts[j] = off, count(rank, j)
		off += l.sendCounts[j]
	}
	l.send = make([]float32, off)
	for j := range n {
		for k := range l.sendCounts[j] {
			l.send[l.sdispls[j]+k] = payload(rank, j, k)
		}
	}
	off = gap
	for i := range n {
		l.rdispls[i], l.recvCounts[i] = off, count(i, rank)
		off += l.recvCounts[i] + gap
	}
	l.recv = make([]float32, off)
	for k := range l.recv {
		l.recv[k] = guard
	}
	return l
}

// payload is element k of what rank from sends to rank to.
func payload(from, to, k int) float32 { return float32(from*100000 + to*1000 + k + 1) }

func (l *a2avLayout) call(ctx context.Context, c *hccl.Comm) error {
	return hccl.AlltoAllV(ctx, c, l.send, l.sendCounts, l.sdispls, l.recv, l.recvCounts, l.rdispls)
}

// check verifies the received blocks (when data is set) and that every
// element outside them still holds the guard.
func (l *a2avLayout) check(rank int, data bool) error {
	inside := make([]bool, len(l.recv))
	for i := range l.recvCounts {
		for k := range l.recvCounts[i] {
			p := l.rdispls[i] + k
			inside[p] = true
			if data && l.recv[p] != payload(i, rank, k) {
				return fmt.Errorf("element %d from rank %d = %v, want %v", k, i, l.recv[p], payload(i, rank, k))
			}
		}
	}
	for p, in := range inside {
		if !in && l.recv[p] != guard {
			return fmt.Errorf("recv[%d], outside every receive range, was overwritten with %v", p, l.recv[p])
		}
	}
	return nil
}

func a2avCount(from, to int) int { return 3 + from + 2*to }

// a2avLocal: rank cfg.bad makes invalid calls that must fail on the spot
// with ErrInvalidArgument and send nothing; then every rank runs a correct
// AlltoAllV, which must work.
func a2avLocal(ctx context.Context, c *hccl.Comm, cfg config) {
	n, r := c.Size(), c.Rank()
	if r == cfg.bad {
		good := func() *a2avLayout { return newLayout(r, n, 2, a2avCount) }
		bad := []struct {
			name  string
			spoil func(l *a2avLayout)
		}{
			{"short sendCounts", func(l *a2avLayout) { l.sendCounts = l.sendCounts[:n-1] }},
			{"negative count", func(l *a2avLayout) { l.sendCounts[(r+1)%n] = -1 }},
			{"send range beyond the buffer", func(l *a2avLayout) { l.sdispls[n-1] = len(l.send) }},
			{"receive range beyond the buffer", func(l *a2avLayout) { l.rdispls[n-1] = len(l.recv) - 1 }},
			{"overlapping receive ranges", func(l *a2avLayout) { l.rdispls[1] = l.rdispls[0] + 1 }},
			{"in place", func(l *a2avLayout) { l.send = l.recv }},
		}
		for _, b := range bad {
			l := good()
			b.spoil(l)
			err := l.call(ctx, c)
			switch {
			case errors.Is(err, hccl.ErrInvalidArgument):
				fmt.Printf("rank %d invalid %q: %v\n", r, b.name, err)
			case err == nil:
				wrong(c, "invalid AlltoAllV (%s) was accepted", b.name)
			default:
				fail(c, err)
			}
		}
	}
	l := newLayout(r, n, 2, a2avCount)
	if err := l.call(ctx, c); err != nil {
		fail(c, err)
	}
	if err := l.check(r, true); err != nil {
		wrong(c, "AlltoAllV after the invalid calls: %v", err)
	}
	fmt.Printf("rank %d done alltoallv ok\n", r)
}

// a2avAgree: rank cfg.bad sends one element more to rank bad+1 than that
// rank expects. Every rank reports its error, and first whether its receive
// buffer outside the ranges is intact.
func a2avAgree(ctx context.Context, c *hccl.Comm, cfg config) {
	n, r := c.Size(), c.Rank()
	victim := (cfg.bad + 1) % n
	count := func(from, to int) int {
		k := a2avCount(from, to)
		// The bad rank's own view of what it sends.
		if r == cfg.bad && from == cfg.bad && to == victim {
			k++
		}
		return k
	}
	l := newLayout(r, n, 4, count)
	err := l.call(ctx, c)
	if gerr := l.check(r, false); gerr != nil {
		fmt.Printf("rank %d guard CORRUPT: %v\n", r, gerr)
	} else {
		fmt.Printf("rank %d guard ok\n", r)
	}
	if err != nil {
		fail(c, err)
	}
	fmt.Printf("rank %d mismatched call returned nil\n", r)
	if err := c.Barrier(ctx); err != nil {
		fail(c, err)
	}
	fmt.Printf("rank %d done (the disagreement went unnoticed)\n", r)
	os.Exit(0)
}

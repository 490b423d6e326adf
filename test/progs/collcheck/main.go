// Command collcheck is the collective check of the multi-host tests: every
// rank joins the job, runs each collective of the runtime (Broadcast from
// two roots, Reduce to every root, and a ring of Send and Recv) on integer
// data
// whose sums are exact in float32 and int64, compares the result with what
// it must be, and prints "rank R/N ok host=H" (or "rank R: FAIL ..." and
// exits 1). With -init-stamp it first prints "rank R init-done UNIXNANO",
// the moment Init returned, which the launch-time measurement reads. With
// -hold D it sleeps D after the checks (a job to crash in the middle),
// running a Barrier every 100 ms so that a failure reaches it. With
// -split C it then splits the job into rows of C ranks (color rank/C) and
// columns (color rank%C), runs the check on the job, its row and its
// column at once from three goroutines, and prints
// "rank R split ok row=I/C col=J/K".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

func main() {
	stamp := flag.Bool("init-stamp", false, "print when Init returned")
	hold := flag.Duration("hold", 0, "keep running this long after the checks")
	n := flag.Int("count", 1000, "elements per rank")
	cols := flag.Int("split", 0, "split into rows of this many ranks and columns, and check all three at once")
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	comm, err := hccl.Init(ctx)
	if err != nil {
		fmt.Printf("rank %s: FAIL init: %v\n", os.Getenv("HCCL_RANK"), err)
		os.Exit(1)
	}
	if *stamp {
		fmt.Printf("rank %d init-done %d\n", comm.Rank(), time.Now().UnixNano())
	}
	if err := check(ctx, comm, *n); err != nil {
		fmt.Printf("rank %d: FAIL %v\n", comm.Rank(), err)
		os.Exit(1)
	}
	if *cols > 0 {
		if err := checkSplit(ctx, comm, *cols, *n); err != nil {
			fmt.Printf("rank %d: FAIL split: %v\n", comm.Rank(), err)
			os.Exit(1)
		}
	}
	host, _ := os.Hostname()
	fmt.Printf("rank %d/%d ok host=%s local=%d/%d\n", comm.Rank(), comm.Size(), host, comm.LocalRank(), comm.LocalSize())
	for end := time.Now().Add(*hold); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := comm.Barrier(ctx); err != nil {
			fmt.Printf("rank %d: hold: %v\n", comm.Rank(), err)
			os.Exit(1)
		}
	}
	if err := comm.Close(); err != nil {
		fmt.Printf("rank %d: FAIL close: %v\n", comm.Rank(), err)
		os.Exit(1)
	}
}

// checkSplit splits c into rows of cols ranks and columns, and runs the
// check on c, the row and the column concurrently.
func checkSplit(ctx context.Context, c *hccl.Comm, cols, n int) error {
	r := c.Rank()
	row, err := c.Split(ctx, r/cols, r)
	if err != nil {
		return fmt.Errorf("split by row: %w", err)
	}
	defer row.Close()
	col, err := c.Split(ctx, r%cols, r)
	if err != nil {
		return fmt.Errorf("split by column: %w", err)
	}
	defer col.Close()
	if row.Rank() != r%cols || col.Rank() != r/cols {
		return fmt.Errorf("row rank %d, column rank %d, want %d and %d", row.Rank(), col.Rank(), r%cols, r/cols)
	}
	errs := make(chan error, 3)
	for name, k := range map[string]*hccl.Comm{"job": c, "row": row, "column": col} {
		go func() {
			if err := check(ctx, k, n); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				return
			}
			errs <- nil
		}()
	}
	var first error
	for range 3 {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		fmt.Printf("rank %d split ok row=%d/%d col=%d/%d\n", r, row.Rank(), row.Size(), col.Rank(), col.Size())
	}
	return first
}

func check(ctx context.Context, c *hccl.Comm, n int) error {
	r, size := c.Rank(), c.Size()
	val := func(rank, i int) float32 { return float32((rank+1)*1000 + i%997) }

	// AllReduce sum, float32: exact (small integers).
	send := make([]float32, n)
	for i := range send {
		send[i] = val(r, i)
	}
	recv := make([]float32, n)
	if err := hccl.AllReduce(ctx, c, send, recv, hccl.Sum); err != nil {
		return fmt.Errorf("allreduce: %w", err)
	}
	for i, v := range recv {
		want := float32(0)
		for q := range size {
			want += val(q, i)
		}
		if v != want {
			return fmt.Errorf("allreduce[%d] = %v, want %v", i, v, want)
		}
	}
	// AllReduce max, int64.
	mx := []int64{int64(r * 7), int64(-r)}
	if err := hccl.AllReduce(ctx, c, mx, mx, hccl.Max); err != nil {
		return fmt.Errorf("allreduce max: %w", err)
	}
	if mx[0] != int64((size-1)*7) || mx[1] != 0 {
		return fmt.Errorf("allreduce max = %v", mx)
	}
	// Reduce (sum, int64) to every root in turn.
	for root := range size {
		in := make([]int64, n)
		for i := range in {
			in[i] = int64(val(r, i))
		}
		var out []int64
		if r == root {
			out = make([]int64, n)
		}
		if err := hccl.Reduce(ctx, c, in, out, hccl.Sum, root); err != nil {
			return fmt.Errorf("reduce to %d: %w", root, err)
		}
		for i, v := range out {
			want := int64(0)
			for q := range size {
				want += int64(val(q, i))
			}
			if v != want {
				return fmt.Errorf("reduce to %d [%d] = %d, want %d", root, i, v, want)
			}
		}
	}
	// Broadcast from the last rank.
	bc := make([]int32, n)
	if r == size-1 {
		for i := range bc {
			bc[i] = int32(i * 3)
		}
	}
	if err := hccl.Broadcast(ctx, c, bc, size-1); err != nil {
		return fmt.Errorf("broadcast: %w", err)
	}
	for i, v := range bc {
		if v != int32(i*3) {
			return fmt.Errorf("broadcast[%d] = %d", i, v)
		}
	}
	// Broadcast in place from a middle rank (on another server than the
	// last one in uneven layouts), float64.
	mid := size / 2
	bm := make([]float64, n)
	if r == mid {
		for i := range bm {
			bm[i] = float64(i) - 0.5
		}
	}
	if err := hccl.Broadcast(ctx, c, bm, mid); err != nil {
		return fmt.Errorf("broadcast from %d: %w", mid, err)
	}
	for i, v := range bm {
		if v != float64(i)-0.5 {
			return fmt.Errorf("broadcast from %d [%d] = %v", mid, i, v)
		}
	}
	// Reduce sum to the middle rank, then max to rank 0 in place.
	red := make([]int32, n)
	var redOut []int32
	if r == mid {
		redOut = make([]int32, n)
	}
	for i := range red {
		red[i] = int32(r*3 + i%11)
	}
	if err := hccl.Reduce(ctx, c, red, redOut, hccl.Sum, mid); err != nil {
		return fmt.Errorf("reduce: %w", err)
	}
	for i, v := range redOut {
		want := int32(0)
		for q := range size {
			want += int32(q*3 + i%11)
		}
		if v != want {
			return fmt.Errorf("reduce[%d] = %d, want %d", i, v, want)
		}
	}
	rmax := []float32{float32(r), -float32(r)}
	var rmaxOut []float32
	if r == 0 {
		rmaxOut = rmax
	}
	if err := hccl.Reduce(ctx, c, rmax, rmaxOut, hccl.Max, 0); err != nil {
		return fmt.Errorf("reduce max: %w", err)
	}
	if r == 0 && (rmax[0] != float32(size-1) || rmax[1] != 0) {
		return fmt.Errorf("reduce max = %v", rmax)
	}
	// AllGather.
	ag := make([]int32, size*n)
	mine := make([]int32, n)
	for i := range mine {
		mine[i] = int32(r*100000 + i)
	}
	if err := hccl.AllGather(ctx, c, mine, ag); err != nil {
		return fmt.Errorf("allgather: %w", err)
	}
	for q := range size {
		for i := range n {
			if ag[q*n+i] != int32(q*100000+i) {
				return fmt.Errorf("allgather[%d][%d] = %d", q, i, ag[q*n+i])
			}
		}
	}
	// ReduceScatter sum.
	rsIn := make([]int64, size*n)
	for i := range rsIn {
		rsIn[i] = int64(r + i)
	}
	rsOut := make([]int64, n)
	if err := hccl.ReduceScatter(ctx, c, rsIn, rsOut, hccl.Sum); err != nil {
		return fmt.Errorf("reducescatter: %w", err)
	}
	for i, v := range rsOut {
		want := int64(0)
		for q := range size {
			want += int64(q + r*n + i)
		}
		if v != want {
			return fmt.Errorf("reducescatter[%d] = %d, want %d", i, v, want)
		}
	}
	// AlltoAll: block q of rank r's send goes to rank q.
	k := 4
	a2a := make([]int32, size*k)
	for q := range size {
		for i := range k {
			a2a[q*k+i] = int32(r*1000 + q*10 + i)
		}
	}
	a2aOut := make([]int32, size*k)
	if err := hccl.AlltoAll(ctx, c, a2a, a2aOut); err != nil {
		return fmt.Errorf("alltoall: %w", err)
	}
	for q := range size {
		for i := range k {
			if want := int32(q*1000 + r*10 + i); a2aOut[q*k+i] != want {
				return fmt.Errorf("alltoall from %d [%d] = %d, want %d", q, i, a2aOut[q*k+i], want)
			}
		}
	}
	// AlltoAllV: rank r sends q+1 copies of r to rank q.
	var vs []int64
	sc, sd := make([]int, size), make([]int, size)
	for q := range size {
		sc[q], sd[q] = q+1, len(vs)
		for range q + 1 {
			vs = append(vs, int64(r))
		}
	}
	rc, rd := make([]int, size), make([]int, size)
	for q := range size {
		rc[q], rd[q] = r+1, q*(r+1)
	}
	vr := make([]int64, size*(r+1))
	if err := hccl.AlltoAllV(ctx, c, vs, sc, sd, vr, rc, rd); err != nil {
		return fmt.Errorf("alltoallv: %w", err)
	}
	var want []int64
	for q := range size {
		for range r + 1 {
			want = append(want, int64(q))
		}
	}
	if !slices.Equal(vr, want) {
		return fmt.Errorf("alltoallv = %v, want %v", vr, want)
	}
	// Send and Recv around the ring: even ranks send first, odd ones
	// receive first (a Comm runs one call at a time), so rank 1 breaks
	// the cycle of waits.
	if size > 1 {
		next, prev := (r+1)%size, (r+size-1)%size
		out, in := make([]int32, n), make([]int32, n)
		for i := range out {
			out[i] = int32(r*100000 + i)
		}
		steps := []func() error{
			func() error { return hccl.Send(ctx, c, out, next) },
			func() error { return hccl.Recv(ctx, c, in, prev) },
		}
		if r%2 == 1 {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return fmt.Errorf("send/recv: %w", err)
			}
		}
		for i, v := range in {
			if v != int32(prev*100000+i) {
				return fmt.Errorf("recv from %d [%d] = %d", prev, i, v)
			}
		}
	}
	return c.Barrier(ctx)
}

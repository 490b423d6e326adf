package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// callFn is what one rank calls in a failure test.
type callFn func(ctx context.Context, c *hccl.Comm) error

func allReduceF32(n int, op hccl.ReduceOp) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		b := make([]float32, n)
		return hccl.AllReduce(ctx, c, b, b, op)
	}
}

func allReduceI32(n int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		b := make([]int32, n)
		return hccl.AllReduce(ctx, c, b, b, hccl.Sum)
	}
}

func allGatherF32(n int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.AllGather(ctx, c, make([]float32, n), make([]float32, n*c.Size()))
	}
}

func broadcastF32(n, root int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.Broadcast(ctx, c, make([]float32, n), root)
	}
}

func reduceF32(n, root int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.Reduce(ctx, c, make([]float32, n), make([]float32, n), hccl.Sum, root)
	}
}

func reduceScatterF32(n int, op hccl.ReduceOp) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.ReduceScatter(ctx, c, make([]float32, n*c.Size()), make([]float32, n), op)
	}
}

func alltoallF32(n int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		return hccl.AlltoAll(ctx, c, make([]float32, n*c.Size()), make([]float32, n*c.Size()))
	}
}

// alltoallvEach sends send elements to every other rank and expects recv
// from each (its own block has recv elements both ways).
func alltoallvEach(send, recv int) callFn {
	return func(ctx context.Context, c *hccl.Comm) error {
		n := c.Size()
		sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		for i := range n {
			sc[i], sd[i], rc[i], rd[i] = send, i*send, recv, i*recv
		}
		sc[c.Rank()] = recv
		return hccl.AlltoAllV(ctx, c, make([]float32, n*send), sc, sd, make([]float32, n*recv), rc, rd)
	}
}

func barrier(ctx context.Context, c *hccl.Comm) error { return c.Barrier(ctx) }

// TestMismatchedCalls: when ranks disagree on the collective or its
// arguments, no rank hangs and none returns success silently: the rank that
// sees the bad frame gets ErrMismatch naming both ranks and both calls, the
// others ErrMismatch or ErrAborted.
func TestMismatchedCalls(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		odd      callFn // what the last rank calls
		common   callFn // what every other rank calls
		mentions []string
	}{
		{"collective", 2, allGatherF32(8), allReduceF32(8, hccl.Sum), []string{"AllReduce", "AllGather"}},
		{"count", 3, allReduceF32(1001, hccl.Sum), allReduceF32(1000, hccl.Sum), []string{"count=1000", "count=1001"}},
		{"dtype", 2, allReduceI32(16), allReduceF32(16, hccl.Sum), []string{"float32", "int32"}},
		{"op", 2, allReduceF32(16, hccl.Max), allReduceF32(16, hccl.Sum), []string{"sum", "max"}},
		{"reducescatter op", 3, reduceScatterF32(5, hccl.Min), reduceScatterF32(5, hccl.Sum), []string{"sum", "min"}},
		{"broadcast root", 2, broadcastF32(10, 1), broadcastF32(10, 0), []string{"root=0", "root=1"}},
		{"broadcast root 4 ranks", 4, broadcastF32(10, 3), broadcastF32(10, 0), []string{"root=0", "root=3"}},
		{"reduce root", 2, reduceF32(10, 1), reduceF32(10, 0), []string{"root=0", "root=1"}},
		{"alltoall count", 3, alltoallF32(4), alltoallF32(5), []string{"AlltoAll"}},
		{"alltoallv counts", 3, alltoallvEach(3, 2), alltoallvEach(2, 2), []string{"expects 2 elements"}},
		{"barrier vs allreduce", 2, barrier, allReduceF32(1, hccl.Sum), []string{"Barrier", "AllReduce"}},
		{"zero count", 2, allReduceF32(0, hccl.Sum), allReduceF32(4, hccl.Sum), []string{"count=0", "count=4"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := startJob(t, tc.n)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			errs := j.each(func(c *hccl.Comm) error {
				if c.Rank() == tc.n-1 {
					return tc.odd(ctx, c)
				}
				return tc.common(ctx, c)
			})
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v to fail", d)
			}
			mismatches := 0
			for r, err := range errs {
				switch {
				case err == nil:
					// A rank may finish its part before the others notice;
					// its next call must then fail: aborted, or mismatched
					// when it reads the odd rank's frames of this call first
					// (a mesh Barrier does at once; runtime/callcheck.go).
					if err := barrier(ctx, j.comms[r]); !errors.Is(err, hccl.ErrAborted) && !errors.Is(err, hccl.ErrMismatch) {
						t.Errorf("rank %d: succeeded, and its next call returned %v, want ErrAborted or ErrMismatch", r, err)
					}
				case errors.Is(err, hccl.ErrMismatch):
					mismatches++
					var oe *hccl.OpError
					if !errors.As(err, &oe) || oe.Rank != r {
						t.Errorf("rank %d: %v is not an *OpError of this rank", r, err)
					}
					for _, m := range tc.mentions {
						if !strings.Contains(err.Error(), m) {
							t.Errorf("rank %d: %q does not mention %q", r, err, m)
						}
					}
				case errors.Is(err, hccl.ErrAborted):
				default:
					t.Errorf("rank %d: %v, want ErrMismatch or ErrAborted", r, err)
				}
			}
			if mismatches == 0 {
				t.Errorf("no rank reported ErrMismatch: %v", errs)
			}
		})
	}
}

// TestInvalidArguments: bad arguments fail on the calling rank before
// anything is sent, and leave the communicator usable.
func TestInvalidArguments(t *testing.T) {
	j := startJob(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := j.comms[0]
	buf := make([]float32, 8)
	ints := make([]int32, 8)
	cases := []struct {
		name string
		call func() error
	}{
		{"allreduce lengths", func() error { return hccl.AllReduce(ctx, c, buf, buf[:7], hccl.Sum) }},
		{"allreduce partial overlap", func() error { return hccl.AllReduce(ctx, c, buf[:4], buf[2:6], hccl.Sum) }},
		{"avg on integers", func() error { return hccl.AllReduce(ctx, c, ints, ints, hccl.Avg) }},
		{"unknown op", func() error { return hccl.AllReduce(ctx, c, buf, buf, hccl.ReduceOp(42)) }},
		{"broadcast root", func() error { return hccl.Broadcast(ctx, c, buf, 2) }},
		{"reduce negative root", func() error { return hccl.Reduce(ctx, c, buf, buf, hccl.Sum, -1) }},
		{"allgather recv length", func() error { return hccl.AllGather(ctx, c, buf[:4], buf[:7]) }},
		{"reducescatter send length", func() error { return hccl.ReduceScatter(ctx, c, buf[:7], make([]float32, 4), hccl.Sum) }},
		{"alltoall not a multiple", func() error { return hccl.AlltoAll(ctx, c, make([]float32, 3), make([]float32, 3)) }},
		{"alltoall in place", func() error { return hccl.AlltoAll(ctx, c, buf, buf) }},
		{"alltoallv counts length", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1}, []int{0}, make([]float32, 8), []int{1, 1}, []int{0, 1})
		}},
		{"alltoallv negative", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1, -1}, []int{0, 1}, make([]float32, 8), []int{1, 1}, []int{0, 1})
		}},
		{"alltoallv send range", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{4, 5}, []int{0, 4}, make([]float32, 8), []int{1, 1}, []int{0, 1})
		}},
		{"alltoallv recv range", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1, 1}, []int{0, 1}, make([]float32, 8), []int{1, 1}, []int{0, 8})
		}},
		{"alltoallv overlapping receives", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1, 1}, []int{0, 1}, make([]float32, 8), []int{3, 3}, []int{0, 2})
		}},
		{"alltoallv in place", func() error {
			return hccl.AlltoAllV(ctx, c, buf, []int{1, 1}, []int{0, 1}, buf, []int{1, 1}, []int{2, 3})
		}},
		{"send to self", func() error { return hccl.Send(ctx, c, buf, 0) }},
		{"recv from nobody", func() error { return hccl.Recv(ctx, c, buf, 5) }},
	}
	for _, tc := range cases {
		err := tc.call()
		if !errors.Is(err, hccl.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	// Still usable: a correct call on both ranks works.
	j.must("allreduce after bad calls", func(c *hccl.Comm) error {
		b := []float32{float32(c.Rank() + 1)}
		if err := hccl.AllReduce(ctx, c, b, b, hccl.Sum); err != nil {
			return err
		}
		if b[0] != 3 {
			return fmt.Errorf("sum %v, want 3", b[0])
		}
		return nil
	})
}

// TestPeerGone: a rank that leaves while its peers wait in a collective
// makes them fail fast with ErrAborted naming it, over both transports.
func TestPeerGone(t *testing.T) {
	for _, tr := range []struct {
		name string
		opts []hccl.Option
	}{{"shm", nil}, {"tcp", []hccl.Option{hccl.WithShmDisabled(true)}}} {
		t.Run(tr.name, func(t *testing.T) {
			j := startJob(t, 3, tr.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Warm up: open every link.
			j.must("warm-up", func(c *hccl.Comm) error { return allReduceF32(4096, hccl.Sum)(ctx, c) })
			start := time.Now()
			errs := j.each(func(c *hccl.Comm) error {
				if c.Rank() == 1 {
					time.Sleep(100 * time.Millisecond)
					return c.Close()
				}
				return allReduceF32(1<<20, hccl.Sum)(ctx, c)
			})
			elapsed := time.Since(start)
			if errs[1] != nil {
				t.Errorf("rank 1 Close: %v", errs[1])
			}
			for _, r := range []int{0, 2} {
				if !errors.Is(errs[r], hccl.ErrAborted) {
					t.Errorf("rank %d: %v, want ErrAborted", r, errs[r])
				}
			}
			if elapsed > 2*time.Second {
				t.Errorf("peers took %v to notice", elapsed)
			}
			t.Logf("rank 0: %v (after %v)", errs[0], elapsed)
		})
	}
}

// TestUseAfterClose: calls on a closed communicator fail with ErrClosed.
func TestUseAfterClose(t *testing.T) {
	j := startJob(t, 1)
	c := j.comms[0]
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(context.Background()); !errors.Is(err, hccl.ErrClosed) {
		t.Fatalf("Barrier after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestExecTimeout: a rank that never calls makes the others fail within
// HCCL_EXEC_TIMEOUT with ErrTimeout naming the call, its number and the
// rank that has not arrived (STUCK: alive but behind).
func TestExecTimeout(t *testing.T) {
	j := startJob(t, 3, hccl.WithExecTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j.must("first", func(c *hccl.Comm) error { return barrier(ctx, c) })
	release := make(chan struct{})
	start := time.Now()
	errs := j.each(func(c *hccl.Comm) error {
		if c.Rank() == 2 {
			<-release // alive (heartbeats go on) but never enters the call
			return nil
		}
		defer func() {
			if c.Rank() == 0 {
				close(release)
			}
		}()
		return allReduceF32(10, hccl.Sum)(ctx, c)
	})
	elapsed := time.Since(start)
	timeouts := 0
	for _, r := range []int{0, 1} {
		if errors.Is(errs[r], hccl.ErrTimeout) {
			timeouts++
			for _, want := range []string{"AllReduce", "#2", "HCCL_EXEC_TIMEOUT", "rank 2 STUCK"} {
				if !strings.Contains(errs[r].Error(), want) {
					t.Errorf("rank %d: %q lacks %q", r, errs[r], want)
				}
			}
		} else if !errors.Is(errs[r], hccl.ErrAborted) {
			t.Errorf("rank %d: %v, want ErrTimeout or ErrAborted", r, errs[r])
		}
	}
	if timeouts == 0 {
		t.Errorf("no rank timed out: %v", errs)
	}
	if elapsed > 5*time.Second {
		t.Errorf("took %v", elapsed)
	}
	t.Logf("after %v: %v", elapsed.Round(time.Millisecond), errs[0])
}

// TestCloseReleasesEverything: after a job's communicators close, a
// failed one included, a new job with the same id can take the same
// shared-memory sockets: nothing of the first lingers.
func TestCloseReleasesEverything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for round := range 3 {
		j := newJobWithID(t, 3, 0, "reuse-"+t.Name())
		j.t = t
		j.each(func(c *hccl.Comm) error {
			if round == 1 && c.Rank() == 2 {
				return allGatherF32(4)(ctx, c) // a mismatch: the job aborts
			}
			return allReduceF32(4, hccl.Sum)(ctx, c)
		})
		for _, c := range j.comms {
			c.Close()
		}
	}
}

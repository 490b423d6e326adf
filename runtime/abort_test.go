package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// TestAbort: a rank that calls Abort while others wait in an AllReduce
// for a rank that has not called it fails every rank's calls, running and
// later, its own included, with ErrAborted naming it and its reason;
// Abort again changes nothing, and Close afterwards works. Over both
// transports.
func TestAbort(t *testing.T) {
	for _, tr := range []struct {
		name string
		opts []hccl.Option
	}{{"shm", nil}, {"tcp", []hccl.Option{hccl.WithShmDisabled(true)}}} {
		t.Run(tr.name, func(t *testing.T) {
			const aborter, idle = 3, 2
			j := startJob(t, 4, tr.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			j.must("warm-up", func(c *hccl.Comm) error { return allReduceF32(1<<16, hccl.Sum)(ctx, c) })

			reason := errors.New("the input pipeline failed")
			aborted := make(chan time.Time, 1)
			go func() {
				time.Sleep(200 * time.Millisecond) // the others are in the AllReduce by now
				aborted <- time.Now()
				j.comms[aborter].Abort(reason)
			}()
			errs := j.each(func(c *hccl.Comm) error {
				if c.Rank() == idle {
					return nil // never enters: the others wait for it
				}
				return allReduceF32(1<<20, hccl.Sum)(ctx, c)
			})
			returned := time.Now()
			if took := returned.Sub(<-aborted); took > 2*time.Second {
				t.Errorf("the pending calls returned %v after Abort", took)
			}
			// The idle rank's first call fails too, as does every later one.
			errs[idle] = barrier(ctx, j.comms[idle])
			for r, err := range errs {
				checkAborted(t, r, err, reason, r == aborter)
				if err := barrier(ctx, j.comms[r]); !errors.Is(err, hccl.ErrAborted) {
					t.Errorf("rank %d: a call after the abort returned %v, want ErrAborted", r, err)
				}
			}

			// Abort again, on the aborter and on a rank the abort reached:
			// the first reason stays.
			j.comms[aborter].Abort(errors.New("again"))
			j.comms[0].Abort(nil)
			for r, c := range j.comms {
				checkAborted(t, r, barrier(ctx, c), reason, r == aborter)
			}
			closeAll(t, j, 10*time.Second)
			j.comms[aborter].Abort(reason) // after Close: nothing
			t.Logf("rank 0: %v", errs[0])
		})
	}
}

// checkAborted checks that rank r's err is ErrAborted naming the rank that
// called Abort with reason, and on that rank (own) also wraps reason.
func checkAborted(t *testing.T, r int, err, reason error, own bool) {
	t.Helper()
	if !errors.Is(err, hccl.ErrAborted) {
		t.Errorf("rank %d: %v, want ErrAborted", r, err)
		return
	}
	for _, want := range []string{"rank 3 called Abort", reason.Error()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("rank %d: %q does not say %q", r, err, want)
		}
	}
	if own && !errors.Is(err, reason) {
		t.Errorf("rank %d: %v does not wrap the reason it aborted with", r, err)
	}
	var oe *hccl.OpError
	if !errors.As(err, &oe) || oe.Rank != r {
		t.Errorf("rank %d: %v, want an *OpError of rank %d", r, err, r)
	}
}

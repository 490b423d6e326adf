package runtime_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio/control"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// testJob is a job of n ranks inside the test process: a real control
// server on loopback and n communicators joined over real TCP.
type testJob struct {
	t      *testing.T
	server *control.Server
	comms  []*hccl.Comm
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startJob starts a control server and n ranks, each calling Init with
// opts, and fails the test unless all join within the test's deadline.
func startJob(t *testing.T, n int, opts ...hccl.Option) *testJob {
	t.Helper()
	j := newJob(t, n, opts...)
	j.t = t
	return j
}

// startJobB is startJob for benchmarks.
func startJobB(b *testing.B, n int, opts ...hccl.Option) *testJob {
	b.Helper()
	return newJob(b, n, opts...)
}

func newJob(t testing.TB, n int, opts ...hccl.Option) *testJob {
	return newJobPerServer(t, n, 0, opts...)
}

// newJobPerServer starts a job whose ranks claim to sit perServer to a
// server (in this one process), as the hierarchical algorithms need.
func newJobPerServer(t testing.TB, n, perServer int, opts ...hccl.Option) *testJob {
	return newJobWithID(t, n, perServer, "", opts...)
}

// newJobWithID starts a job with the given job id ("" makes a unique one).
func newJobWithID(t testing.TB, n, perServer int, jobID string, opts ...hccl.Option) *testJob {
	return newJobOn(t, n, perServer, nil, jobID, opts...)
}

// newJobServers starts a job whose ranks claim the servers labels names
// (hccl.Job.Servers): uneven or not contiguous, in this one process.
func newJobServers(t testing.TB, labels []int, opts ...hccl.Option) *testJob {
	return newJobOn(t, len(labels), 0, labels, "", opts...)
}

func newJobOn(t testing.TB, n, perServer int, labels []int, jobID string, opts ...hccl.Option) *testJob {
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := control.NewServer(control.ServerConfig{Addr: "127.0.0.1:0", Key: key, Size: n, Log: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if jobID == "" {
		jobID = "test-" + wire.EncodeKey(key[:6]) // names the ranks' shm sockets: unique per job
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ctx) }()
	j := &testJob{server: srv, comms: make([]*hccl.Comm, n)}
	t.Cleanup(func() {
		for _, c := range j.comms {
			if c != nil {
				c.Close()
			}
		}
		cancel()
		srv.Close()
		<-served
	})

	initCtx, initCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer initCancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := append([]hccl.Option{
				hccl.WithJob(hccl.Job{Rank: r, Size: n, ControlAddr: srv.Addr(), JobID: jobID, Key: key, RanksPerServer: perServer, Servers: labels}),
				hccl.WithLogger(quietLogger()),
			}, opts...)
			j.comms[r], errs[r] = hccl.Init(initCtx, o...)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: Init: %v", r, err)
		}
	}
	return j
}

// each runs f on every rank concurrently and returns the ranks' errors.
func (j *testJob) each(f func(c *hccl.Comm) error) []error {
	errs := make([]error, len(j.comms))
	var wg sync.WaitGroup
	for r, c := range j.comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[r] = fmt.Errorf("panic: %v", p)
				}
			}()
			errs[r] = f(c)
		}()
	}
	wg.Wait()
	return errs
}

// must runs f on every rank and fails the test on any rank's error.
func (j *testJob) must(what string, f func(c *hccl.Comm) error) {
	j.t.Helper()
	for r, err := range j.each(f) {
		if err != nil {
			j.t.Fatalf("%s: rank %d: %v", what, r, err)
		}
	}
}

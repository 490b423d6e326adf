package runtime_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio/control"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// lonelyJob starts a control server for a job of size ranks and returns
// the Job of its rank 0, whose Init waits for ranks that never come.
func lonelyJob(t *testing.T, size int) hccl.Job {
	t.Helper()
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := control.NewServer(control.ServerConfig{Addr: "127.0.0.1:0", Key: key, Size: size, Log: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); srv.Close(); <-served })
	return hccl.Job{Rank: 0, Size: size, ControlAddr: srv.Addr(), JobID: "test-" + wire.EncodeKey(key[:6]), Key: key}
}

// TestConnectTimeout: Init gives up with ErrTimeout once the connect
// timeout has passed without every rank joining, whether
// HCCL_CONNECT_TIMEOUT or WithConnectTimeout set it (the option wins).
func TestConnectTimeout(t *testing.T) {
	const bound = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		env  string
		opts []hccl.Option
	}{
		{"env", "0.3", nil},
		{"option", "60", []hccl.Option{hccl.WithConnectTimeout(bound)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HCCL_CONNECT_TIMEOUT", tc.env)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			opts := append([]hccl.Option{hccl.WithJob(lonelyJob(t, 2)), hccl.WithLogger(quietLogger())}, tc.opts...)
			start := time.Now()
			c, err := hccl.Init(ctx, opts...)
			took := time.Since(start)
			if err == nil {
				c.Close()
				t.Fatal("Init of a job whose other rank never comes succeeded")
			}
			if !errors.Is(err, hccl.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Init: %v, want ErrTimeout wrapping context.DeadlineExceeded", err)
			}
			if !strings.Contains(err.Error(), bound.String()) {
				t.Errorf("Init: %q does not name the bound %v", err, bound)
			}
			if took < bound || took > 5*time.Second {
				t.Errorf("Init gave up after %v, want about %v", took, bound)
			}
		})
	}
}

// TestErrorsKeepTheirCause: an invalid argument's error is both
// ErrInvalidArgument and, through errors.Is and errors.As, its cause.
func TestErrorsKeepTheirCause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	job := hccl.Job{Rank: 0, Size: 1, ControlAddr: "127.0.0.1:1", Key: make([]byte, 32),
		RankTableFile: filepath.Join(t.TempDir(), "missing.json")}
	c, err := hccl.Init(ctx, hccl.WithJob(job), hccl.WithLogger(quietLogger()))
	if err == nil {
		c.Close()
		t.Fatal("Init with a missing rank table succeeded")
	}
	var pe *fs.PathError
	if !errors.Is(err, hccl.ErrInvalidArgument) || !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) {
		t.Errorf("Init: %v, want ErrInvalidArgument wrapping the *fs.PathError of the missing file", err)
	}
	var oe *hccl.OpError
	if !errors.As(err, &oe) || oe.Op != "Init" {
		t.Errorf("Init: %v, want an *OpError of Init", err)
	}
}

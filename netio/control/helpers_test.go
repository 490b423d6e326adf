package control

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	"github.com/hcclrun/hcclrun/internal/wire"
)

const (
	testHeartbeat = 100 * time.Millisecond
	testLostAfter = 600 * time.Millisecond
)

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testJob is a running server with its events recorded.
type testJob struct {
	t    *testing.T
	s    *Server
	key  wire.Key
	logs *syncbuf.Buffer

	mu     sync.Mutex
	events []Event
}

func newJob(t *testing.T, size int, tweak func(*ServerConfig)) *testJob {
	t.Helper()
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	j := &testJob{t: t, key: key, logs: &syncbuf.Buffer{}}
	cfg := ServerConfig{Addr: "127.0.0.1:0", Key: key, Size: size,
		Log:               slog.New(slog.NewTextHandler(j.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HeartbeatInterval: testHeartbeat, LostAfter: testLostAfter}
	if tweak != nil {
		tweak(&cfg)
	}
	j.s, err = NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- j.s.Serve(context.Background()) }()
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for e := range j.s.Events() {
			j.mu.Lock()
			j.events = append(j.events, e)
			j.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		j.s.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		<-collected
		if t.Failed() {
			t.Logf("server log:\n%s", j.logs.String())
		}
	})
	return j
}

func (j *testJob) dial(ctx context.Context, rank int) *Client {
	j.t.Helper()
	c, err := Dial(ctx, j.s.Addr(), j.key, rank, j.s.cfg.Size, nil)
	if err != nil {
		j.t.Fatalf("rank %d: %v", rank, err)
	}
	j.t.Cleanup(func() { c.Close() })
	return c
}

// waitEvent waits for an event that satisfies pred and returns it.
func (j *testJob) waitEvent(d time.Duration, what string, pred func(Event) bool) Event {
	j.t.Helper()
	end := time.Now().Add(d)
	for {
		for _, e := range j.snapshot() {
			if pred(e) {
				return e
			}
		}
		if time.Now().After(end) {
			j.t.Fatalf("no %s event within %v; got %v", what, d, j.snapshot())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (j *testJob) snapshot() []Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Event(nil), j.events...)
}

func countEvents[T Event](evs []Event) int {
	n := 0
	for _, e := range evs {
		if _, ok := e.(T); ok {
			n++
		}
	}
	return n
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

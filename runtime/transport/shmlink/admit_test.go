package shmlink

import (
	"log/slog"
	"net"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestSetupCap: a flood of silent connections from this user (which the
// uid check lets through) four times the cap leaves at most the cap in
// set-up, holding a descriptor and a goroutine each, the rest closed at
// once, and a rank of the job still connects behind them. The evictions
// are logged a handful of lines, not one per connection.
func TestSetupCap(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	ln, job, key, logs := listenLogged(t, slog.LevelInfo)
	goroutines, fds := goruntime.NumGoroutine(), openFDs(t)

	const flood = 4 * DefaultMaxSetups
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("unix", ln.Addr())
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	for deadline := time.Now().Add(10 * time.Second); ln.evicted.Load() < flood-DefaultMaxSetups; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d set-ups evicted after %d silent connections, want %d (at most %d in progress)", ln.evicted.Load(), flood, flood-DefaultMaxSetups, DefaultMaxSetups)
		}
	}
	if n := ln.setups.len(); n > DefaultMaxSetups {
		t.Errorf("%d set-ups in progress, want at most %d", n, DefaultMaxSetups)
	}
	// Ours are the flood's ends; the listener's at most the cap.
	if n := openFDs(t) - fds; n > flood+DefaultMaxSetups+8 {
		t.Errorf("%d more descriptors open, want at most %d (the flood's) + %d (in set-up)", n, flood, DefaultMaxSetups)
	}
	// An evicted set-up's goroutine ends just after it is counted
	// evicted: on a busy machine some are still on their way out.
	n := goruntime.NumGoroutine() - goroutines
	for deadline := time.Now().Add(5 * time.Second); n > DefaultMaxSetups+8 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n = goruntime.NumGoroutine() - goroutines
	}
	if n > DefaultMaxSetups+8 {
		t.Errorf("%d more goroutines, want at most %d (one per set-up in progress)", n, DefaultMaxSetups)
	}
	// The evicted connections are closed on the listener's side: their
	// reads end at once, those of the ones still in set-up time out.
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := c.Read(make([]byte, 1)); err != nil && !os.IsTimeout(err) {
				closed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := closed.Load(); n < flood-DefaultMaxSetups {
		t.Errorf("%d of %d silent connections closed by the listener, want %d", n, flood, flood-DefaultMaxSetups)
	}

	start := time.Now()
	if err := genuineLink(t, ctx, ln, job, key); err != nil {
		t.Fatalf("a rank of the job behind %d silent connections: %v", DefaultMaxSetups, err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("a rank of the job took %v to connect", el)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n > refusedBurst+1 {
		t.Errorf("%d warnings for %d evictions, want at most %d:\n%s", n, flood-DefaultMaxSetups, refusedBurst+1, logs.String())
	}
}

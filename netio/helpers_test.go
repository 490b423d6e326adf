package netio

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// testCtx is the deadline every test runs under.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func testCtxB(b *testing.B, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	b.Cleanup(cancel)
	return ctx
}

func testKey(t *testing.T) wire.Key {
	t.Helper()
	k, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// debugLogger logs at every level into b.
func debugLogger(b *syncbuf.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func countLines(s, sub string) int {
	n := 0
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}

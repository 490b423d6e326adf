package shm

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func socketPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]net.Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "pair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
	}
	return conns[0], conns[1]
}

func TestWatch(t *testing.T) {
	tests := []struct {
		name      string
		act       func(mine, theirs net.Conn)
		wantCause string // "" means Watch returns nil and leaves the rings alone
	}{
		{"peer exits", func(_, theirs net.Conn) { theirs.Close() }, "peer exited"},
		{"peer writes", func(_, theirs net.Conn) { theirs.Write([]byte{1}) }, "unexpected data"},
		{"we close", func(mine, _ net.Conn) { mine.Close() }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t, 10*time.Second)
			prod, cons := ringPair(t, 4096)
			mine, theirs := socketPair(t)
			done := make(chan error, 1)
			go func() { done <- Watch(mine, prod, cons) }()
			time.Sleep(20 * time.Millisecond)
			tt.act(mine, theirs)
			var cause error
			select {
			case cause = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Watch did not return")
			}
			if tt.wantCause == "" {
				if cause != nil {
					t.Fatalf("Watch = %v, want nil", cause)
				}
				cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				defer cancel()
				if _, err := cons.Peek(cctx, 1); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("ring touched by a local close: %v", err)
				}
				return
			}
			if cause == nil || !strings.Contains(cause.Error(), tt.wantCause) {
				t.Fatalf("Watch = %v, want %q", cause, tt.wantCause)
			}
			if _, err := cons.Peek(ctx, 1); !errors.Is(err, ErrPeerGone) || !strings.Contains(err.Error(), tt.wantCause) {
				t.Errorf("consumer after Watch: %v", err)
			}
			if _, err := prod.Reserve(ctx, 1); !errors.Is(err, ErrPeerGone) {
				t.Errorf("producer after Watch: %v", err)
			}
		})
	}
}

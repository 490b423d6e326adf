package shmlink

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/linktest"
	"github.com/hcclrun/hcclrun/shm"
)

// jobSeq makes every test's job id unique within the process, and the pid
// across processes, so that abstract socket names never collide with
// another test binary running at the same time.
var jobSeq atomic.Int64

func newJobID() string { return fmt.Sprintf("test-%d-%d", os.Getpid(), jobSeq.Add(1)) }

func newKey(t testing.TB) []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// listenLogged listens for a fresh job as rank 0, logging at level into
// the returned buffer, and closes the listener when the test ends.
func listenLogged(t *testing.T, level slog.Level) (ln *Listener, job string, key []byte, logs *syncbuf.Buffer) {
	t.Helper()
	job, key, logs = newJobID(), newKey(t), &syncbuf.Buffer{}
	ln, err := Listen(job, 0, key, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, job, key, logs
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pair opens a real link between ranks 0 (listening) and 1 (dialling)
// through an abstract socket in this process.
func pair(t testing.TB, ringBytes int) (listener, dialer *Link) {
	t.Helper()
	return pairWith(t, DialConfig{RingBytes: ringBytes})
}

// pairWith is pair with the dialer's other settings from cfg (its job,
// key and ranks are filled in).
func pairWith(t testing.TB, cfg DialConfig) (listener, dialer *Link) {
	t.Helper()
	ctx := testCtx(t, 20*time.Second)
	job, key := newJobID(), newKey(t)
	ln, err := Listen(job, 0, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		l   *Link
		err error
	}
	dc := make(chan res, 1)
	go func() {
		cfg.JobID, cfg.Addr, cfg.Key, cfg.Self, cfg.Peer = job, ln.Addr(), key, 1, 0
		l, err := Dial(ctx, cfg)
		dc <- res{l, err}
	}()
	a, peer, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := <-dc
	if d.err != nil {
		a.Close()
		t.Fatal(d.err)
	}
	if peer != 1 || a.Peer() != 1 || d.l.Peer() != 0 {
		t.Fatalf("peers: accept %d, listener side %d, dialer side %d", peer, a.Peer(), d.l.Peer())
	}
	t.Cleanup(func() { a.Close(); d.l.Close() })
	return a, d.l
}

// genuineLink opens one link to ln from rank 1 of job, as a rank of the
// job would, and closes both ends; it returns the dialer's error.
func genuineLink(t *testing.T, ctx context.Context, ln *Listener, job string, key []byte) error {
	t.Helper()
	dc := make(chan error, 1)
	go func() {
		l, err := Dial(ctx, DialConfig{JobID: job, Addr: ln.Addr(), Key: key, Self: 1, Peer: 0, RingBytes: 4096})
		if err == nil {
			l.Close()
		}
		dc <- err
	}()
	link, _, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	link.Close()
	return <-dc
}

func TestConformance(t *testing.T) {
	for _, tt := range []struct {
		name      string
		ringBytes int
		lazy      bool
	}{
		{"default ring", 0, false},
		{"4 KiB ring", 4 << 10, false},
		{"lazy 64 KiB ring", 64 << 10, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			linktest.Run(t, func(t *testing.T) (transport.Link, transport.Link) {
				l, d := pairWith(t, DialConfig{RingBytes: tt.ringBytes, Segment: shm.Options{Lazy: tt.lazy}})
				want := DefaultRingBytes
				if tt.ringBytes != 0 {
					want = tt.ringBytes
				}
				if l.RingBytes() != want || d.RingBytes() != want {
					t.Fatalf("rings of %d and %d bytes, want %d", l.RingBytes(), d.RingBytes(), want)
				}
				return d, l
			})
		})
	}
}

// TestStreamOutOfStep: bytes that are not a frame header (a bug on the
// sending side) fail RecvHeader with wire.ErrBadFrame, for good: nothing
// after them can be trusted.
func TestStreamOutOfStep(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	rx, tx := pair(t, 4096)
	if err := tx.tx.Write(ctx, make([]byte, wire.HeaderSize)); err != nil {
		t.Fatal(err)
	}
	var h wire.Header
	err := rx.RecvHeader(ctx, &h)
	if !errors.Is(err, wire.ErrBadFrame) {
		t.Fatalf("err = %v, want wire.ErrBadFrame", err)
	}
	if !strings.Contains(err.Error(), "rank 0 recv from rank 1") {
		t.Errorf("err = %v does not name both ranks", err)
	}
	good := wire.Header{Seq: 7}
	if err := tx.Send(ctx, &good, nil); err != nil {
		t.Fatal(err)
	}
	if err := rx.RecvHeader(ctx, &h); !errors.Is(err, wire.ErrBadFrame) {
		t.Errorf("after a bad frame: %v, want the same error again", err)
	}
}

// TestRecvMisuse: reading a header before the payload of the last frame,
// or a payload without a header, is an error that leaves the link usable.
func TestRecvMisuse(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	rx, tx := pair(t, 4096)
	if err := rx.RecvPayload(ctx, nil); err == nil {
		t.Error("RecvPayload before any header succeeded")
	}
	h := wire.Header{Seq: 1, Len: 3}
	if err := tx.Send(ctx, &h, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	var got wire.Header
	if err := rx.RecvHeader(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := rx.RecvHeader(ctx, &got); err == nil || !strings.Contains(err.Error(), "not consumed") {
		t.Errorf("second RecvHeader: %v", err)
	}
	if err := rx.VisitPayload(ctx, 2, func(int, []byte) {}); err == nil {
		t.Error("VisitPayload of 2 bytes for a 3-byte frame succeeded")
	}
	p := make([]byte, 3)
	if err := rx.RecvPayload(ctx, p); err != nil || p[2] != 3 {
		t.Fatalf("RecvPayload after the misuse: %v %v", p, err)
	}
}

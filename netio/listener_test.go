package netio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
)

func newTestListener(t *testing.T, lc ListenConfig, key []byte, lb *syncbuf.Buffer) *Listener {
	t.Helper()
	l, err := lc.Listen("127.0.0.1:0", key, Hello{Purpose: PurposeControl, Rank: LauncherRank}, debugLogger(lb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestListenerDropsBadPeers opens the bad connections first and keeps the
// silent ones open, then checks that a good client still gets through at
// once and that every bad one is dropped and logged.
func TestListenerDropsBadPeers(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	key := testKey(t)
	var lb syncbuf.Buffer
	const hsTimeout = 300 * time.Millisecond
	l := newTestListener(t, ListenConfig{HandshakeTimeout: hsTimeout}, key, &lb)
	addr := l.Addr().String()

	raw := func(b []byte, closeAfter bool) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if len(b) > 0 {
			c.Write(b)
		}
		if closeAfter {
			c.Close()
		}
		return c
	}
	silent := raw(nil, false)
	loris := raw([]byte("HC"), false)
	raw([]byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), false) // a TLS ClientHello
	raw(nil, true)                                                     // a port scan
	if _, _, err := Dial(ctx, addr, testKey(t), Hello{Purpose: PurposeControl, Rank: 9}); !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong-key dial: %v, want ErrAuth", err)
	}

	start := time.Now()
	c, peerOfClient, err := Dial(ctx, addr, key, Hello{Purpose: PurposeControl, Rank: 4, Tag: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, peer, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if took := time.Since(start); took > hsTimeout/2 {
		t.Fatalf("good client waited %v behind the bad ones", took)
	}
	if peer != (Hello{Purpose: PurposeControl, Rank: 4, Tag: 7}) || peerOfClient.Rank != LauncherRank {
		t.Fatalf("server learned %v, client learned %v", peer, peerOfClient)
	}

	// The silent peers are hung up on when the handshake deadline passes.
	for name, bc := range map[string]net.Conn{"silent": silent, "slow loris": loris} {
		bc.SetReadDeadline(time.Now().Add(3 * hsTimeout))
		n, err := bc.Read(make([]byte, 64))
		if n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("%s peer: read %d, %v; want EOF from the listener", name, n, err)
		}
		if since := time.Since(start); since > 2*hsTimeout {
			t.Fatalf("%s peer dropped after %v", name, since)
		}
	}
	waitFor(t, time.Second, "5 WARN lines", func() bool { return countLines(lb.String(), "level=WARN msg=\"netio: dropped connection\"") >= 5 })
	logs := lb.String()
	for _, want := range []string{silent.LocalAddr().String(), loris.LocalAddr().String()} {
		if countLines(logs, "remote="+want) != 1 {
			t.Errorf("no WARN naming %s in:\n%s", want, logs)
		}
	}
	if countLines(logs, "authentication failed") != 1 || countLines(logs, "not an hcclrun handshake") < 2 {
		t.Errorf("logs do not say why:\n%s", logs)
	}

	// The accepted connection carries data both ways.
	go sc.Write([]byte("hello"))
	b := make([]byte, 5)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "hello" {
		t.Fatalf("read %q, %v", b, err)
	}
}

func TestListenerConcurrentDials(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	key := testKey(t)
	var lb syncbuf.Buffer
	l := newTestListener(t, ListenConfig{}, key, &lb)
	const n = 32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			c, _, err := Dial(ctx, l.Addr().String(), key, Hello{Purpose: PurposeData, Rank: uint32(i)})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			// Each side echoes its rank so the pairing is checked end to end.
			fmt.Fprintf(c, "%04d", i)
			b := make([]byte, 4)
			if _, err := io.ReadFull(c, b); err != nil || string(b) != fmt.Sprintf("%04d", i) {
				errs <- fmt.Errorf("rank %d: echo %q, %v", i, b, err)
			}
		})
	}
	seen := map[uint32]bool{}
	for range n {
		c, peer, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if seen[peer.Rank] {
			t.Fatalf("rank %d accepted twice", peer.Rank)
		}
		seen[peer.Rank] = true
		go func() {
			defer c.Close()
			b := make([]byte, 4)
			if _, err := io.ReadFull(c, b); err == nil {
				c.Write(b)
			}
			if string(b) != fmt.Sprintf("%04d", peer.Rank) {
				errs <- fmt.Errorf("rank %d sent %q", peer.Rank, b)
			}
			io.Copy(io.Discard, c)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if lb.String() != "" {
		t.Errorf("unexpected logs:\n%s", lb.String())
	}
}

func TestDialRetriesUntilListening(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	key := testKey(t)
	// Find a free port, then leave it closed for a while.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	probe.Close()

	type res struct {
		peer Hello
		err  error
	}
	done := make(chan res, 1)
	go func() {
		c, peer, err := Dial(ctx, addr, key, Hello{Purpose: PurposeData, Rank: 1})
		if c != nil {
			defer c.Close()
		}
		done <- res{peer, err}
	}()
	time.Sleep(300 * time.Millisecond)
	l, err := Listen(addr, key, Hello{Purpose: PurposeData, Rank: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, _, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if r := <-done; r.err != nil || r.peer.Rank != 0 {
		t.Fatalf("Dial: %v, %v", r.peer, r.err)
	}
}

func TestDialGivesUp(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := probe.Addr().String()
	probe.Close()
	ctx, cancel := context.WithTimeout(testCtx(t, 5*time.Second), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = Dial(ctx, addr, testKey(t), Hello{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Fatalf("gave up after %v", d)
	}
}

func TestListenerClose(t *testing.T) {
	key := testKey(t)
	var lb syncbuf.Buffer
	l := newTestListener(t, ListenConfig{}, key, &lb)
	// A connection still in its handshake when the listener closes.
	silent, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	errc := make(chan error, 1)
	go func() { _, _, err := l.Accept(); errc <- err }()
	time.Sleep(50 * time.Millisecond)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Accept still blocked after Close")
	}
	silent.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("pending handshake not ended by Close: %v", err)
	}
	if _, _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second Accept: %v", err)
	}
}

func TestListenerUnix(t *testing.T) {
	ctx := testCtx(t, 5*time.Second)
	key := testKey(t)
	path := filepath.Join(t.TempDir(), "shm.sock")
	l, err := ListenConfig{Network: "unix"}.Listen(path, key, Hello{Purpose: PurposeShm, Rank: 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := net.Dial("unix", path)
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := Handshake(ctx, c, key, RoleClient, Hello{Purpose: PurposeShm, Rank: 1}); err == nil {
			io.Copy(io.Discard, c)
		}
	}()
	c, peer, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if peer != (Hello{Purpose: PurposeShm, Rank: 1}) {
		t.Fatalf("peer %v", peer)
	}
}

// TestListenerFloodOfSilentConnections: more silent connections than
// MaxHandshakes cannot lock a real client out: the oldest stalled
// handshakes are evicted, and the client gets through at once.
func TestListenerFloodOfSilentConnections(t *testing.T) {
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenConfig{MaxHandshakes: 8, HandshakeTimeout: 30 * time.Second}.Listen("127.0.0.1:0", key, Hello{Purpose: PurposeControl, Rank: LauncherRank}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for range 40 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	time.Sleep(100 * time.Millisecond) // let the listener take them all
	accepted := make(chan error, 1)
	go func() {
		c, _, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	c, _, err := Dial(ctx, ln.Addr().String(), key, Hello{Purpose: PurposeControl, Rank: 3})
	if err != nil {
		t.Fatalf("a real client behind 40 silent connections (limit 8): %v", err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

package netio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"

	"github.com/hcclrun/hcclrun/internal/wire"
)

func newTestListener(t *testing.T, lc ListenConfig, key []byte, lb *syncbuf.Buffer) *Listener {
	t.Helper()
	l, err := lc.Listen("127.0.0.1:0", key, wire.Hello{Purpose: wire.PurposeControl, Rank: wire.LauncherRank}, debugLogger(lb))
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
	if _, _, err := Dial(ctx, addr, testKey(t), wire.Hello{Purpose: wire.PurposeControl, Rank: 9}); !errors.Is(err, wire.ErrAuth) {
		t.Fatalf("wrong-key dial: %v, want wire.ErrAuth", err)
	}

	start := time.Now()
	c, peerOfClient, err := Dial(ctx, addr, key, wire.Hello{Purpose: wire.PurposeControl, Rank: 4, Tag: 7})
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
	if peer != (wire.Hello{Purpose: wire.PurposeControl, Rank: 4, Tag: 7}) || peerOfClient.Rank != wire.LauncherRank {
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
			c, _, err := Dial(ctx, l.Addr().String(), key, wire.Hello{Purpose: wire.PurposeData, Rank: uint32(i)})
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
		peer wire.Hello
		err  error
	}
	done := make(chan res, 1)
	go func() {
		c, peer, err := Dial(ctx, addr, key, wire.Hello{Purpose: wire.PurposeData, Rank: 1})
		if c != nil {
			defer c.Close()
		}
		done <- res{peer, err}
	}()
	time.Sleep(300 * time.Millisecond)
	l, err := Listen(addr, key, wire.Hello{Purpose: wire.PurposeData, Rank: 0}, nil)
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
	_, _, err = Dial(ctx, addr, testKey(t), wire.Hello{})
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
	l, err := ListenConfig{Network: "unix"}.Listen(path, key, wire.Hello{Purpose: wire.PurposeShm, Rank: 0}, nil)
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
		if _, err := wire.Handshake(ctx, c, key, wire.RoleClient, wire.Hello{Purpose: wire.PurposeShm, Rank: 1}); err == nil {
			io.Copy(io.Discard, c)
		}
	}()
	c, peer, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if peer != (wire.Hello{Purpose: wire.PurposeShm, Rank: 1}) {
		t.Fatalf("peer %v", peer)
	}
}

// TestListenerFloodOfSilentConnections: more silent connections than
// MaxHandshakes cannot lock a real client out: the oldest stalled
// handshakes are evicted, and the client gets through at once. The
// evictions are logged like refusals: a few in full, the rest counted.
func TestListenerFloodOfSilentConnections(t *testing.T) {
	key := testKey(t)
	var lb syncbuf.Buffer
	ln := newTestListener(t, ListenConfig{MaxHandshakes: 8, HandshakeTimeout: 30 * time.Second}, key, &lb)
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	const nSilent = 40
	for range nSilent {
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
	c, _, err := Dial(ctx, ln.Addr().String(), key, wire.Hello{Purpose: wire.PurposeControl, Rank: 3})
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

	// The real client, accepted in FIFO order after the silent ones,
	// evicted one more; the 7 left are aborted by Close, unlogged.
	ln.Close()
	lines := refusalLines(t, lb.String(), "netio: evicted the oldest handshake in progress")
	if want := nSilent - 8 + 1; lines.full+lines.counted != want {
		t.Errorf("%d evictions logged + %d counted, want %d in all:\n%s", lines.full, lines.counted, want, lb.String())
	}
	if lines.full != refusedBurst || lines.summaries != 1 {
		t.Errorf("%d evictions in full and %d summaries, want %d and 1:\n%s", lines.full, lines.summaries, refusedBurst, lb.String())
	}
}

// refusals is what refusalLines found in a listener's log.
type refusals struct {
	full      int // lines of one refused connection each
	summaries int // lines with a count
	counted   int // connections the summaries count
}

var summaryRE = regexp.MustCompile(`msg="netio: refused (\d+) more connections in the last [0-9.]+m?s" addr=`)

// refusalLines sorts the lines of log into refusals logged in full (with
// the message full) and summaries, and fails the test on any other line.
func refusalLines(t *testing.T, log, full string) refusals {
	t.Helper()
	var r refusals
	for line := range strings.SplitSeq(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		if !strings.Contains(line, "level=WARN") {
			t.Errorf("not a WARN line: %s", line)
		}
		if strings.Contains(line, `msg="`+full+`"`) {
			r.full++
			continue
		}
		m := summaryRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("unexpected line: %s", line)
			continue
		}
		n, _ := strconv.Atoi(m[1])
		r.summaries++
		r.counted += n
	}
	return r
}

// TestListenerRefusalFlood: a flood of 1000 bad connections, wrong keys
// and garbage, costs a handful of WARN lines (the first few in full, then
// counts) that account for every one of them, and a genuine client that
// dials in the middle of it gets through.
func TestListenerRefusalFlood(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	key, wrong := testKey(t), testKey(t)
	var lb syncbuf.Buffer
	l := newTestListener(t, ListenConfig{}, key, &lb)
	addr := l.Addr().String()

	// bad misbehaves in the i-th way and waits for the listener to hang
	// up: it logs or counts the refusal before it closes.
	bad := func(i int) error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if i%2 == 0 {
			if _, err := wire.Handshake(ctx, c, wrong, wire.RoleClient, wire.Hello{Purpose: wire.PurposeData, Rank: uint32(i)}); !errors.Is(err, wire.ErrAuth) {
				return fmt.Errorf("connection %d with a wrong key: %v, want wire.ErrAuth", i, err)
			}
		} else if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("connection %d: waiting for the hang-up: %v", i, err)
		}
		return nil
	}
	const flood, workers = 1000, 16
	var next, done atomic.Int32
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < flood; i = int(next.Add(1)) - 1 {
				if err := bad(i); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		})
	}

	waitFor(t, 20*time.Second, "100 refused connections", func() bool { return done.Load() >= 100 })
	c, _, err := Dial(ctx, addr, key, wire.Hello{Purpose: wire.PurposeData, Rank: 7})
	if err != nil {
		t.Fatalf("a genuine client during the flood: %v", err)
	}
	defer c.Close()
	sc, peer, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	sc.Close()
	if peer != (wire.Hello{Purpose: wire.PurposeData, Rank: 7}) {
		t.Fatalf("accepted %v, want the genuine client", peer)
	}
	flooding := done.Load()

	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	before := refusalLines(t, lb.String(), "netio: dropped connection")
	if before.full != refusedBurst {
		t.Errorf("%d refusals logged in full, want the first %d", before.full, refusedBurst)
	}
	l.Close()
	logs := lb.String()
	r := refusalLines(t, logs, "netio: dropped connection")
	if r.full+r.counted != flood {
		t.Errorf("%d refusals in full + %d counted, want %d:\n%s", r.full, r.counted, flood, logs)
	}
	// One summary per refusedEvery of the flood, and Close's.
	if most := int(elapsed/refusedEvery) + 1; r.summaries < 1 || r.summaries > most {
		t.Errorf("%d summaries after a flood of %v, want 1 to %d:\n%s", r.summaries, elapsed, most, logs)
	}
	t.Logf("%d bad connections in %v (the genuine client dialled after %d): %d log lines", flood, elapsed.Round(time.Millisecond), flooding, r.full+r.summaries)
}

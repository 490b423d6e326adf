package linktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// NewPair returns two connected links, a to b. The suite closes both when
// the subtest ends (Close must be idempotent, so newPair may register its
// own cleanup too).
type NewPair func(t *testing.T) (a, b transport.Link)

// Run runs every conformance test on fresh pairs from newPair.
func Run(t *testing.T, newPair NewPair) {
	tests := []struct {
		name string
		fn   func(t *testing.T, a, b transport.Link)
	}{
		{"Ordering", testOrdering},
		{"ZeroLength", testZeroLength},
		{"HeaderFields", testHeaderFields},
		{"LargePayload", testLargePayload},
		{"FullDuplex", testFullDuplex},
		{"PingPong", testPingPong},
		{"LengthMismatch", testLengthMismatch},
		{"ShutWhileRecv", testShutWhileRecv},
		{"PeerShutWhileRecv", testPeerShutWhileRecv},
		{"ShutWhileSend", testShutWhileSend},
		{"PeerShutWhileSend", testPeerShutWhileSend},
		{"ShutBothWhileBusy", testShutBothWhileBusy},
		{"CancelRecv", testCancelRecv},
		{"CancelSend", testCancelSend},
		{"DeadlineRecv", testDeadlineRecv},
		{"SendAfterClose", testSendAfterClose},
		{"VisitPayload", testVisitPayload},
		{"TrySend", testTrySend},
		{"Post", testPost},
		{"StartSend", testStartSend},
		{"Background", testBackground},
		{"Arrived", testArrived},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newPair(t)
			t.Cleanup(func() {
				a.Close()
				b.Close()
			})
			tt.fn(t, a, b)
		})
	}
}

// opTimeout bounds every call the suite makes that should succeed: a
// broken link fails its test with a context error instead of hanging the
// binary.
const opTimeout = 60 * time.Second

// releaseWithin is how quickly a blocked call must return once it is
// released (Close, cancel). Generous for a loaded 2-core machine; the real
// figure is milliseconds.
const releaseWithin = 3 * time.Second

// blockFor is how long a call is left blocked before it is released, so
// that it has certainly gone to sleep.
const blockFor = 150 * time.Millisecond

func opCtx(t *testing.T) context.Context {
	d := opTimeout
	if dl, ok := t.Deadline(); ok && time.Until(dl) < d+5*time.Second {
		d = time.Until(dl) - 5*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// fill writes a payload that depends on seed and on the position, so that a
// reordered, shifted or truncated payload does not compare equal.
func fill(p []byte, seed uint64) {
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x)
	}
}

func payload(n int, seed uint64) []byte {
	p := make([]byte, n)
	fill(p, seed)
	return p
}

func header(seq uint64, n int) wire.Header {
	return wire.Header{
		Seq:    seq,
		Call:   wire.Call{Coll: uint8(seq), DType: uint8(seq >> 8), Op: 3, Root: int32(seq % 5), Count: seq * 3},
		Src:    uint32(seq * 7),
		Step:   uint32(seq),
		Offset: seq << 20,
		Len:    uint32(n),
	}
}

// recvFrame reads one frame, header and payload.
func recvFrame(ctx context.Context, l transport.Link) (wire.Header, []byte, error) {
	var h wire.Header
	if err := l.RecvHeader(ctx, &h); err != nil {
		return h, nil, err
	}
	p := make([]byte, h.Len)
	if err := l.RecvPayload(ctx, p); err != nil {
		return h, nil, err
	}
	return h, p, nil
}

// async runs fn in a goroutine and returns its result channel.
func async(fn func() error) <-chan error {
	c := make(chan error, 1)
	go func() { c <- fn() }()
	return c
}

func wait(t *testing.T, what string, c <-chan error) {
	t.Helper()
	select {
	case err := <-c:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(opTimeout + 5*time.Second):
		t.Fatalf("%s: no result after %v", what, opTimeout)
	}
}

// sizes covers the boundaries a transport is likely to have: empty, around
// a frame header, around pages, rings and socket buffers.
var sizes = []int{0, 1, 7, 47, 48, 49, 100, 1000, 4095, 4096, 4097, 8191, 65535, 65536, 65537, 100000, 262144, 1<<20 + 3}

func testOrdering(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	const frames = 3000
	sizeOf := func(i int) int {
		if i%10 == 9 {
			return sizes[(i/10)%len(sizes)]
		}
		return (i * 37) % 3000
	}
	sent := async(func() error {
		buf := make([]byte, 1<<20+3)
		for i := 0; i < frames; i++ {
			n := sizeOf(i)
			h := header(uint64(i), n)
			fill(buf[:n], uint64(i))
			if err := a.Send(ctx, &h, buf[:n]); err != nil {
				return fmt.Errorf("send %d: %w", i, err)
			}
		}
		return nil
	})
	want := make([]byte, 1<<20+3)
	for i := 0; i < frames; i++ {
		h, p, err := recvFrame(ctx, b)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		n := sizeOf(i)
		if wh := header(uint64(i), n); h != wh {
			t.Fatalf("frame %d: header %+v, want %+v", i, h, wh)
		}
		fill(want[:n], uint64(i))
		if !bytes.Equal(p, want[:n]) {
			t.Fatalf("frame %d: payload of %d bytes differs", i, n)
		}
	}
	wait(t, "sender", sent)
}

func testZeroLength(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	const frames = 200
	sent := async(func() error {
		for i := 0; i < frames; i++ {
			n := 0
			if i%3 == 2 {
				n = 5
			}
			h := header(uint64(i), n)
			if err := a.Send(ctx, &h, payload(n, uint64(i))); err != nil {
				return fmt.Errorf("send %d: %w", i, err)
			}
		}
		return nil
	})
	for i := 0; i < frames; i++ {
		h, p, err := recvFrame(ctx, b)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if h.Seq != uint64(i) || int(h.Len) != len(p) {
			t.Fatalf("frame %d: seq %d len %d", i, h.Seq, h.Len)
		}
		if i%3 == 2 && !bytes.Equal(p, payload(5, uint64(i))) {
			t.Fatalf("frame %d after zero-length frames: payload differs", i)
		}
	}
	wait(t, "sender", sent)
}

func testHeaderFields(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	headers := []wire.Header{
		{},
		{Seq: math.MaxUint64, Call: wire.Call{Coll: 255, DType: 255, Op: 255, Root: math.MaxInt32, Count: math.MaxUint64},
			Src: math.MaxUint32, Step: math.MaxUint32, Offset: math.MaxUint64},
		{Seq: 1, Call: wire.Call{Root: -1}, Src: 3, Step: 2},
		{Seq: 0x0102030405060708, Call: wire.Call{Coll: 1, DType: 2, Op: 3, Root: math.MinInt32, Count: 0x1112131415161718},
			Src: 0x21222324, Step: 0x31323334, Offset: 0x4142434445464748},
	}
	for i := range headers {
		headers[i].Len = uint32(i * 3)
	}
	sent := async(func() error {
		for i := range headers {
			h := headers[i]
			if err := a.Send(ctx, &h, payload(int(h.Len), uint64(i))); err != nil {
				return err
			}
			if h != headers[i] {
				return fmt.Errorf("Send changed the caller's header: %+v", h)
			}
		}
		return nil
	})
	for i, want := range headers {
		h, p, err := recvFrame(ctx, b)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if h != want {
			t.Errorf("frame %d: got %+v, want %+v", i, h, want)
		}
		if !bytes.Equal(p, payload(int(want.Len), uint64(i))) {
			t.Errorf("frame %d: payload differs", i)
		}
	}
	wait(t, "sender", sent)
}

func testLargePayload(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	n := 64 << 20
	if testing.Short() {
		n = 8 << 20
	}
	src := payload(n, 64)
	sent := async(func() error {
		h := header(1, n)
		if err := a.Send(ctx, &h, src); err != nil {
			return err
		}
		// A small frame right behind the large one: the stream must be
		// exactly where it should be.
		h = header(2, 3)
		return a.Send(ctx, &h, []byte{1, 2, 3})
	})
	h, p, err := recvFrame(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Seq != 1 || !bytes.Equal(p, src) {
		t.Fatalf("large frame: seq %d, %d bytes, equal %v", h.Seq, len(p), bytes.Equal(p, src))
	}
	h, p, err = recvFrame(ctx, b)
	if err != nil || h.Seq != 2 || !bytes.Equal(p, []byte{1, 2, 3}) {
		t.Fatalf("frame after the large one: seq %d %v %v", h.Seq, p, err)
	}
	wait(t, "sender", sent)
}

// testFullDuplex sends in both directions at once: four goroutines, with
// frames much larger than any buffer. A link whose Send waits for the
// other side to start receiving, or whose two directions share a lock
// held across a blocking call, deadlocks here.
func testFullDuplex(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	frames, size := 16, 4<<20
	if testing.Short() {
		frames = 4
	}
	sender := func(l transport.Link, seed uint64) func() error {
		return func() error {
			buf := make([]byte, size)
			for i := 0; i < frames; i++ {
				fill(buf, seed+uint64(i))
				h := header(seed+uint64(i), size)
				if err := l.Send(ctx, &h, buf); err != nil {
					return fmt.Errorf("send %d: %w", i, err)
				}
			}
			return nil
		}
	}
	receiver := func(l transport.Link, seed uint64) func() error {
		return func() error {
			want := make([]byte, size)
			for i := 0; i < frames; i++ {
				h, p, err := recvFrame(ctx, l)
				if err != nil {
					return fmt.Errorf("recv %d: %w", i, err)
				}
				fill(want, seed+uint64(i))
				if h.Seq != seed+uint64(i) || !bytes.Equal(p, want) {
					return fmt.Errorf("frame %d: seq %d, payload equal %v", i, h.Seq, bytes.Equal(p, want))
				}
			}
			return nil
		}
	}
	var results [4]<-chan error
	results[0] = async(sender(a, 1000))
	results[1] = async(sender(b, 2000))
	results[2] = async(receiver(b, 1000))
	results[3] = async(receiver(a, 2000))
	for i, what := range []string{"a sends", "b sends", "b receives", "a receives"} {
		wait(t, what, results[i])
	}
}

func testPingPong(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	const rounds = 2000
	echo := async(func() error {
		for i := 0; i < rounds; i++ {
			h, p, err := recvFrame(ctx, b)
			if err != nil {
				return err
			}
			if err := b.Send(ctx, &h, p); err != nil {
				return err
			}
		}
		return nil
	})
	start := time.Now()
	for i := 0; i < rounds; i++ {
		h := header(uint64(i), 8)
		p := payload(8, uint64(i))
		if err := a.Send(ctx, &h, p); err != nil {
			t.Fatalf("round %d send: %v", i, err)
		}
		gh, gp, err := recvFrame(ctx, a)
		if err != nil {
			t.Fatalf("round %d recv: %v", i, err)
		}
		if gh != h || !bytes.Equal(gp, p) {
			t.Fatalf("round %d: echo differs", i)
		}
	}
	wait(t, "echo", echo)
	t.Logf("%d round trips of 8-byte frames, %v each", rounds, time.Since(start)/rounds)
}

func testLengthMismatch(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	h := header(1, 10)
	if err := a.Send(ctx, &h, make([]byte, 9)); err == nil {
		t.Error("Send with h.Len 10 and 9 payload bytes succeeded")
	}
	// The receiving side's misuse, in the other direction: a's sending
	// side may refuse to go on after the Send error above.
	c := async(func() error {
		h := header(2, 10)
		return b.Send(ctx, &h, make([]byte, 10))
	})
	var got wire.Header
	if err := a.RecvHeader(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := a.RecvPayload(ctx, make([]byte, 11)); err == nil {
		t.Error("RecvPayload of 11 bytes for a 10-byte frame succeeded")
	}
	wait(t, "send", c)
}

// blocked starts call, checks that it is still blocked after blockFor,
// releases it and returns its error, failing the test if it takes longer
// than releaseWithin.
func blocked(t *testing.T, call func() error, release func()) error {
	t.Helper()
	c := async(call)
	select {
	case err := <-c:
		t.Fatalf("call returned before it was released: %v", err)
	case <-time.After(blockFor):
	}
	start := time.Now()
	release()
	select {
	case err := <-c:
		if err == nil {
			t.Fatal("released call returned no error")
		}
		t.Logf("released after %v: %v", time.Since(start), err)
		return err
	case <-time.After(releaseWithin):
		// Wait for the call before failing: the cleanup closes the
		// links, and a link's memory must not be unmapped under a call
		// still running in it (that would crash the binary, not fail the
		// test). The call's own context (opTimeout) bounds the wait.
		t.Errorf("call still blocked %v after the release", releaseWithin)
		t.Fatalf("released call ended %v after the release: %v", time.Since(start).Round(time.Millisecond), <-c)
	}
	return nil
}

func testShutWhileRecv(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	var h wire.Header
	blocked(t, func() error { return b.RecvHeader(ctx, &h) }, b.Shut)
	if err := b.RecvHeader(ctx, &h); err == nil {
		t.Error("RecvHeader after Shut succeeded")
	}
	b.Shut() // idempotent, must not panic
	if err := b.Close(); err != nil {
		t.Errorf("Close after Shut: %v", err)
	}
}

func testPeerShutWhileRecv(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	// The peer's last frame before Close is delivered, then the error.
	h := header(1, 5)
	if err := a.Send(ctx, &h, payload(5, 1)); err != nil {
		t.Fatal(err)
	}
	if _, p, err := recvFrame(ctx, b); err != nil || !bytes.Equal(p, payload(5, 1)) {
		t.Fatalf("frame before close: %v", err)
	}
	blocked(t, func() error { return b.RecvHeader(ctx, &h) }, a.Shut)
}

func testShutWhileSend(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	big := make([]byte, 64<<20) // more than any buffer: Send must block
	h := header(1, len(big))
	blocked(t, func() error { return a.Send(ctx, &h, big) }, a.Shut)
}

func testPeerShutWhileSend(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	big := make([]byte, 64<<20)
	h := header(1, len(big))
	blocked(t, func() error { return a.Send(ctx, &h, big) }, b.Shut)
}

// testShutBothWhileBusy shuts both ends at once while four goroutines
// stream large frames both ways: every call must return (most with an
// error) promptly, and nothing may panic or race.
func testShutBothWhileBusy(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	const size = 1 << 20
	pump := func(l transport.Link, send bool) func() error {
		return func() error {
			buf := make([]byte, size)
			for {
				var err error
				if send {
					h := header(1, size)
					err = l.Send(ctx, &h, buf)
				} else {
					var h wire.Header
					if err = l.RecvHeader(ctx, &h); err == nil {
						err = l.RecvPayload(ctx, buf[:h.Len])
					}
				}
				if err != nil {
					return nil // the expected end
				}
			}
		}
	}
	calls := []<-chan error{async(pump(a, true)), async(pump(b, true)), async(pump(a, false)), async(pump(b, false))}
	time.Sleep(blockFor)
	go a.Shut()
	go b.Shut()
	deadline := time.After(releaseWithin)
	for i, c := range calls {
		select {
		case <-c:
		case <-deadline:
			t.Fatalf("call %d still running %v after both ends shut", i, releaseWithin)
		}
	}
}

func testCancelRecv(t *testing.T, a, b transport.Link) {
	ctx, cancel := context.WithCancel(opCtx(t))
	var h wire.Header
	err := blocked(t, func() error { return b.RecvHeader(ctx, &h) }, cancel)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want one wrapping context.Canceled", err)
	}
}

func testCancelSend(t *testing.T, a, b transport.Link) {
	ctx, cancel := context.WithCancel(opCtx(t))
	big := make([]byte, 64<<20)
	h := header(1, len(big))
	err := blocked(t, func() error { return a.Send(ctx, &h, big) }, cancel)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want one wrapping context.Canceled", err)
	}
}

func testDeadlineRecv(t *testing.T, a, b transport.Link) {
	ctx, cancel := context.WithTimeout(opCtx(t), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	var h wire.Header
	err := b.RecvHeader(ctx, &h)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one wrapping context.DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 200*time.Millisecond+releaseWithin {
		t.Errorf("200 ms deadline returned after %v", el)
	}
}

func testSendAfterClose(t *testing.T, a, b transport.Link) {
	ctx := opCtx(t)
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	a.Close() // idempotent, must not panic
	h := header(1, 1)
	if err := a.Send(ctx, &h, []byte{1}); err == nil {
		t.Error("Send after Close succeeded")
	}
	// The peer learns of the close: its Recv fails rather than hangs.
	c := async(func() error {
		var h wire.Header
		return b.RecvHeader(ctx, &h)
	})
	select {
	case err := <-c:
		if err == nil {
			t.Error("peer's RecvHeader after Close succeeded")
		}
	case <-time.After(releaseWithin):
		t.Errorf("peer's RecvHeader still blocked %v after Close", releaseWithin)
	}
}

func testVisitPayload(t *testing.T, a, b transport.Link) {
	v, ok := b.(transport.PayloadVisitor)
	if !ok {
		t.Skip("link does not implement transport.PayloadVisitor")
	}
	ctx := opCtx(t)
	// Odd sizes put later payloads at odd positions in a ring.
	frameSizes := []int{0, 1, 1001, 3, 70001, 5, 5<<20 + 1, 7, 4093, 1 << 20, 3}
	sent := async(func() error {
		for i, n := range frameSizes {
			h := header(uint64(i), n)
			if err := a.Send(ctx, &h, payload(n, uint64(i))); err != nil {
				return err
			}
		}
		return nil
	})
	for i, n := range frameSizes {
		var h wire.Header
		if err := b.RecvHeader(ctx, &h); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		want := payload(n, uint64(i))
		if i%2 == 1 {
			// Interleave with RecvPayload: the stream stays in step.
			got := make([]byte, n)
			if err := b.RecvPayload(ctx, got); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("frame %d by RecvPayload: %v", i, err)
			}
			continue
		}
		var mu sync.Mutex
		var got []byte
		next, pieces := 0, 0
		err := v.VisitPayload(ctx, n, func(off int, p []byte) {
			mu.Lock()
			defer mu.Unlock()
			if off != next {
				t.Errorf("frame %d: piece at %d, want %d", i, off, next)
			}
			if len(p) == 0 {
				t.Errorf("frame %d: empty piece", i)
			}
			if off+len(p) < n && len(p)%8 != 0 {
				t.Errorf("frame %d: piece of %d bytes at %d: not the last, and not whole 8-byte words", i, len(p), off)
			}
			got = append(got, p...)
			next += len(p)
			pieces++
		})
		if err != nil {
			t.Fatalf("frame %d: VisitPayload: %v", i, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("frame %d: visited %d bytes, want %d, equal %v", i, len(got), n, bytes.Equal(got, want))
		}
		t.Logf("frame of %d bytes in %d pieces", n, pieces)
	}
	wait(t, "sender", sent)
}

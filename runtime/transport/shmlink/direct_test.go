package shmlink

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/shm"
)

func patterned(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) + seed
	}
	return p
}

// TestDirectInProcess: payloads of DirectMin bytes and more are posted in
// place and arrive intact, copied out or visited piece by piece; WaitPosted
// waits for the receiver's read; smaller payloads are not posted.
func TestDirectInProcess(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	l, d := pair(t, 0)
	if !l.ReadsDirect() || !d.ReadsDirect() {
		t.Fatalf("reads direct: listener %v, dialer %v", l.ReadsDirect(), d.ReadsDirect())
	}
	small := patterned(DirectMin-1, 1)
	h := wire.Header{Len: uint32(len(small))}
	if posted, err := d.TryPost(ctx, &h, small, false); posted || err != nil {
		t.Fatalf("TryPost of %d bytes: posted %v, %v", len(small), posted, err)
	}

	sizes := []int{DirectMin, DirectMin + 1, 1<<20 + 3, 3*directPiece + 5}
	for i, n := range sizes {
		p := patterned(n, byte(i))
		h := wire.Header{Seq: uint64(i), Len: uint32(n)}
		if posted, err := d.TryPost(ctx, &h, p, false); !posted || err != nil {
			t.Fatalf("TryPost of %d bytes: posted %v, %v", n, posted, err)
		}
		waited := make(chan error, 1)
		go func() { waited <- d.WaitPosted(ctx) }()
		select {
		case err := <-waited:
			t.Fatalf("WaitPosted returned before the receiver read (%v)", err)
		case <-time.After(50 * time.Millisecond):
		}
		var got wire.Header
		if err := l.RecvHeader(ctx, &got); err != nil || got != h {
			t.Fatalf("header %+v, %v; want %+v", got, err, h)
		}
		out := make([]byte, n)
		if i%2 == 0 {
			if err := l.RecvPayload(ctx, out); err != nil {
				t.Fatal(err)
			}
		} else {
			next := 0
			err := l.VisitPayload(ctx, n, func(off int, b []byte) {
				if off != next || (off+len(b) < n && len(b)%8 != 0) {
					t.Errorf("piece at %d of %d bytes after %d", off, len(b), next)
				}
				next = off + copy(out[off:], b)
			})
			if err != nil || next != n {
				t.Fatalf("visit: %v, %d of %d bytes", err, next, n)
			}
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, p) {
			t.Fatalf("payload %d (%d bytes) differs", i, n)
		}
	}
	// The ring goes on working around the posted frames.
	h = wire.Header{Seq: 9, Len: 5}
	if err := d.Send(ctx, &h, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if _, p, err := recvOne(ctx, l); err != nil || string(p) != "after" {
		t.Fatalf("frame after the posted ones: %q, %v", p, err)
	}
}

func recvOne(ctx context.Context, l *Link) (wire.Header, []byte, error) {
	var h wire.Header
	if err := l.RecvHeader(ctx, &h); err != nil {
		return h, nil, err
	}
	p := make([]byte, h.Len)
	return h, p, l.RecvPayload(ctx, p)
}

// TestNoDirect: a dialer that asks for no direct payloads gets none, in
// either direction.
func TestNoDirect(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	l, d := pairWith(t, DialConfig{NoDirect: true})
	if l.ReadsDirect() || d.ReadsDirect() {
		t.Fatalf("reads direct: listener %v, dialer %v", l.ReadsDirect(), d.ReadsDirect())
	}
	p := make([]byte, 1<<20)
	h := wire.Header{Len: uint32(len(p))}
	for _, s := range []*Link{l, d} {
		if posted, err := s.TryPost(ctx, &h, p, false); posted || err != nil {
			t.Fatalf("TryPost: posted %v, %v", posted, err)
		}
	}
}

// TestDirectTwoProcesses: large payloads go over in place both ways
// between two processes (the child reads ours, we read the child's).
func TestDirectTwoProcesses(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	// This side spins in WaitPosted instead of sleeping, so that it sees
	// the child's offers of shared reads at once (below).
	link, c := childLinkWith(t, ctx, "post-echo", ListenConfig{Wait: shm.WaitPolicy{Spin: time.Second}})
	if !link.ReadsDirect() {
		t.Fatal("the parent cannot read the child's memory")
	}
	for i, n := range []int{100, DirectMin, 4<<20 + 1} {
		p := patterned(n, byte(i))
		h := wire.Header{Seq: uint64(i), Len: uint32(n)}
		posted, err := link.TryPost(ctx, &h, p, false)
		if err != nil {
			t.Fatal(err)
		}
		if !posted {
			if n >= DirectMin {
				t.Fatalf("%d bytes not posted", n)
			}
			err = link.Send(ctx, &h, p)
		} else {
			err = link.WaitPosted(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, q, err := recvOne(ctx, link)
		if err != nil || got != h || !bytes.Equal(q, p) {
			t.Fatalf("echo of %d bytes: %+v, equal %v, %v", n, got, bytes.Equal(q, p), err)
		}
	}
	// The child's reads are shared with this side's WaitPosted, which
	// writes pieces into the child's memory: until one did.
	var written atomic.Int64
	link.writer = func(dst, src uint64, n int) error {
		written.Add(int64(n))
		return link.writeShare(dst, src, n)
	}
	for i := 0; i < 20 && written.Load() == 0; i++ {
		p := patterned(4<<20, byte(i))
		h := wire.Header{Seq: uint64(10 + i), Len: uint32(len(p))}
		if posted, err := link.TryPost(ctx, &h, p, true); !posted || err != nil {
			t.Fatalf("TryPost: posted %v, %v", posted, err)
		}
		if err := link.WaitPosted(ctx); err != nil {
			t.Fatal(err)
		}
		got, q, err := recvOne(ctx, link)
		if err != nil || got != h || !bytes.Equal(q, p) {
			t.Fatalf("echo of %d bytes: %+v, equal %v, %v", len(p), got, bytes.Equal(q, p), err)
		}
	}
	if written.Load() == 0 {
		t.Fatal("no piece written into the child's memory in 20 payloads")
	}
	link.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// TestDirectFromRegion: payloads that lie in a shared region go over in
// place between two processes, both ways, and arrive intact; the side
// that receives them copies them out of its own mapping of the sender's
// region (one mapping, however many payloads), never from a pipe.
func TestDirectFromRegion(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	link, c := childLink(t, ctx, "region-echo")
	if !link.ReadsDirect() {
		t.Fatal("the parent cannot read the child's memory")
	}
	region, err := shm.NewRegion(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer region.Free()
	for i, n := range []int{DirectMin, DirectMin + 3, 3*directPiece + 5, 4<<20 + 1} {
		p := region.Bytes()[1000 : 1000+n]
		copy(p, patterned(n, byte(i)))
		h := wire.Header{Seq: uint64(i), Len: uint32(n)}
		if posted, err := link.TryPost(ctx, &h, p, false); !posted || err != nil {
			t.Fatalf("TryPost of %d bytes: posted %v, %v", n, posted, err)
		}
		if err := link.WaitPosted(ctx); err != nil {
			t.Fatal(err)
		}
		var got wire.Header
		if err := link.RecvHeader(ctx, &got); err != nil || got != h {
			t.Fatalf("echo header %+v, %v; want %+v", got, err, h)
		}
		if link.mapped == nil || link.spliced != 0 {
			t.Fatalf("echo of %d bytes: in a mapping %v, %d bytes spliced", n, link.mapped != nil, link.spliced)
		}
		out := make([]byte, n)
		if i%2 == 0 {
			err = link.RecvPayload(ctx, out)
		} else {
			err = link.VisitPayload(ctx, n, func(off int, b []byte) { copy(out[off:], b) })
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, patterned(n, byte(i))) {
			t.Fatalf("echo of %d bytes differs", n)
		}
	}
	if got := link.regions.Mapped(); got != 1 {
		t.Fatalf("%d of the child's regions mapped, want 1", got)
	}
	link.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
}

// TestDirectReaderKilled: a sender waiting for a peer to read its posted
// payload fails promptly when the peer is killed, instead of waiting on.
func TestDirectReaderKilled(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	link, c := childLink(t, ctx, "idle-dialer")
	p := patterned(1<<20, 0)
	h := wire.Header{Len: uint32(len(p))}
	if posted, err := link.TryPost(ctx, &h, p, false); !posted || err != nil {
		t.Fatalf("TryPost: posted %v, %v", posted, err)
	}
	c.killDuring(t, "WaitPosted", func() error { return link.WaitPosted(ctx) })
	c.cmd.Wait()
}

// TestSharedRead: a receiver copying a large direct payload out shares the
// copy with a sender waiting in WaitPosted, which writes pieces of it
// straight into the receiver's destination; one that cannot write has the
// receiver read it all, and is offered no more. Sender and receiver are
// goroutines of one process here, and the sender does not always get to
// run while the receiver reads (it yields its P while it spins): each part
// sends payloads until the sender took a piece, at most a few dozen.
func TestSharedRead(t *testing.T) {
	ctx := testCtx(t, 60*time.Second)
	// The sender spins in WaitPosted instead of sleeping, so that it
	// sees the offers at once.
	l, d := pairWith(t, DialConfig{Wait: shm.WaitPolicy{Spin: time.Second}})
	seq := 0
	thenWaits := true
	send := func(n int) {
		t.Helper()
		seq++
		p := patterned(n, byte(seq))
		h := wire.Header{Seq: uint64(seq), Len: uint32(n)}
		if posted, err := d.TryPost(ctx, &h, p, thenWaits); !posted || err != nil {
			t.Fatalf("TryPost of %d bytes: posted %v, %v", n, posted, err)
		}
		waited := make(chan error, 1)
		go func() { waited <- d.WaitPosted(ctx) }()
		time.Sleep(time.Millisecond)
		got, q, err := recvOne(ctx, l)
		if err != nil || got != h {
			t.Fatalf("%d bytes: header %+v, %v", n, got, err)
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(q, p) {
			t.Fatalf("payload %d (%d bytes) differs", seq, n)
		}
	}
	// Sizes around the part that is offered: what the pipe does not take
	// (splice.go), from shareMin on.
	for _, n := range []int{shareMin, 1<<20 + 3, 1<<20 + shareMin - 1, 1<<20 + shareMin + 1} {
		send(n)
	}
	var written atomic.Int64
	d.writer = func(dst, src uint64, n int) error {
		written.Add(int64(n))
		return d.writeShare(dst, src, n)
	}
	// A sender that did not say it only waits is offered nothing.
	thenWaits = false
	for range 20 {
		send(4 << 20)
	}
	if written.Load() != 0 {
		t.Fatalf("the sender wrote %d bytes of payloads posted with thenWaits false", written.Load())
	}
	thenWaits = true
	for i := 0; i < 50 && written.Load() == 0; i++ {
		send(4<<20 + 4095)
	}
	if written.Load() == 0 || l.rx.ShareBroken() {
		t.Fatalf("the sender wrote %d bytes of 50 payloads; broken %v", written.Load(), l.rx.ShareBroken())
	}

	var refused atomic.Int64
	d.writer = func(dst, src uint64, n int) error {
		refused.Add(1)
		return errors.New("refused")
	}
	for i := 0; i < 50 && refused.Load() == 0; i++ {
		send(4 << 20)
	}
	if refused.Load() == 0 || !l.rx.ShareBroken() {
		t.Fatalf("refused %d pieces of 50 payloads, broken %v", refused.Load(), l.rx.ShareBroken())
	}
	// No more offers: the writer is not asked again.
	n := refused.Load()
	for range 3 {
		send(4 << 20)
	}
	if refused.Load() != n {
		t.Fatalf("asked to write %d pieces after the refusal", refused.Load()-n)
	}
	if err := d.writeShare(1, 2, 3); err == nil {
		t.Fatal("writeShare wrote bytes of no payload handed over")
	}
}

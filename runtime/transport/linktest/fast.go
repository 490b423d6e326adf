package linktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// The fast paths the executor takes where a link offers them
// (transport.TrySender, Poster, AsyncSender, Arriver): each test skips
// over a link without the ability, and holds one that has it to what the
// executor relies on.

// trySendMax bounds what testTrySend offers a link that never says it is
// full: a link may buffer without bound, but the test must end.
const trySendMax = 64 << 20

// returnsWithin runs call and fails the test if it has not returned
// within releaseWithin: a call that must not wait.
func returnsWithin(t *testing.T, what string, call func() error) {
	t.Helper()
	select {
	case err := <-async(call):
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(releaseWithin):
		t.Fatalf("%s still running after %v: it waited", what, releaseWithin)
	}
}

// testTrySend: TrySend never waits; it sends frames while the link has
// room for them whole and then reports that it did not, sending nothing
// of a frame it did not take; every frame it took arrives, in order and
// intact, with the frames sent after it; once the receiver has drained
// the link it takes frames again; and after Shut it takes none.
func testTrySend(t *testing.T, a, b transport.Link) {
	ts, ok := a.(transport.TrySender)
	if !ok {
		t.Skip("link does not implement transport.TrySender")
	}
	ctx := opCtx(t)
	// Frames of the sizes of small steps, one of each in turn, until the
	// link is full.
	frameSizes := []int{0, 8, 100, 1000, 4096, 40000}
	sizeOf := func(i int) int { return frameSizes[i%len(frameSizes)] }
	sent, total, full := 0, 0, false
	taken := map[int]bool{} // the sizes the link took
	returnsWithin(t, "TrySend on a link nobody reads", func() error {
		for total < trySendMax {
			n := sizeOf(sent)
			h := header(uint64(sent), n)
			ok, err := ts.TrySend(ctx, &h, payload(n, uint64(sent)))
			if err != nil {
				return fmt.Errorf("TrySend %d: %w", sent, err)
			}
			if !ok {
				full = true
				return nil
			}
			taken[n] = true
			sent++
			total += n
		}
		return nil
	})
	t.Logf("TrySend took %d frames (%d payload bytes) before the link was full: %v", sent, total, full)
	after := header(1<<40, 3)
	done := async(func() error { return a.Send(ctx, &after, []byte{1, 2, 3}) })
	for i := 0; i < sent; i++ {
		h, p, err := recvFrame(ctx, b)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if want := header(uint64(i), sizeOf(i)); h != want || !bytes.Equal(p, payload(sizeOf(i), uint64(i))) {
			t.Fatalf("frame %d: header %+v, want %+v; payload equal %v", i, h, want, bytes.Equal(p, payload(sizeOf(i), uint64(i))))
		}
	}
	if h, p, err := recvFrame(ctx, b); err != nil || h != after || !bytes.Equal(p, []byte{1, 2, 3}) {
		t.Fatalf("the frame sent after those TrySend took: %+v %v, %v (a frame it refused went out?)", h, p, err)
	}
	wait(t, "Send after TrySend", done)
	if !full {
		return
	}
	// Drained: there is room again, for every size it took before.
	for i, n := range frameSizes {
		if !taken[n] {
			continue
		}
		h := header(uint64(i), n)
		ok, err := ts.TrySend(ctx, &h, payload(n, uint64(i)))
		if err != nil || !ok {
			t.Fatalf("TrySend of %d bytes on a drained link: sent %v, %v", n, ok, err)
		}
		if gh, gp, err := recvFrame(ctx, b); err != nil || gh != h || !bytes.Equal(gp, payload(n, uint64(i))) {
			t.Fatalf("frame of %d bytes after draining: %+v, %v", n, gh, err)
		}
	}
	a.Shut()
	h := header(1, 8)
	if ok, _ := ts.TrySend(ctx, &h, payload(8, 1)); ok {
		t.Error("TrySend after Shut sent the frame")
	}
}

// testPost: a posted payload arrives intact, in order with the frames
// sent around it, whichever way it is read (copied, visited, or copied
// with the sender's share while it waits: thenWaits); WaitPosted does not
// return before the receiver has read every posted payload, so that the
// caller may reuse the memory once it has returned: the test overwrites
// it then, and the receiver must have read what was posted. Payloads the
// link does not post (too small, say) go by Send.
func testPost(t *testing.T, a, b transport.Link) {
	poster, ok := a.(transport.Poster)
	if !ok {
		t.Skip("link does not implement transport.Poster")
	}
	visitor, _ := b.(transport.PayloadVisitor)
	ctx := opCtx(t)
	type frame struct {
		n         int
		thenWaits bool
		visit     bool
	}
	frames := []frame{{100, false, false}, {1 << 20, false, false}, {5000, false, false}, {4<<20 + 3, true, false},
		{300000, false, true}, {1 << 20, true, false}, {2<<20 + 5, false, true}, {0, false, false}}
	posts := 0
	for i, f := range frames {
		h := header(uint64(i), f.n)
		p := payload(f.n, uint64(i))
		// The receiver reads a while later: WaitPosted must wait for it.
		got := make(chan []byte, 1)
		read := async(func() error {
			time.Sleep(blockFor / 3)
			var gh wire.Header
			if err := b.RecvHeader(ctx, &gh); err != nil {
				return err
			}
			if gh != h {
				return fmt.Errorf("header %+v, want %+v", gh, h)
			}
			q := make([]byte, f.n)
			var err error
			if f.visit && visitor != nil {
				err = visitor.VisitPayload(ctx, f.n, func(off int, piece []byte) { copy(q[off:], piece) })
			} else {
				err = b.RecvPayload(ctx, q)
			}
			got <- q
			return err
		})
		posted, err := poster.TryPost(ctx, &h, p, f.thenWaits)
		if err != nil {
			t.Fatalf("frame %d: TryPost of %d bytes: %v", i, f.n, err)
		}
		if !posted {
			if err := a.Send(ctx, &h, p); err != nil {
				t.Fatalf("frame %d: Send: %v", i, err)
			}
		} else {
			posts++
		}
		if err := poster.WaitPosted(ctx); err != nil {
			t.Fatalf("frame %d: WaitPosted: %v", i, err)
		}
		fill(p, ^uint64(i)) // the caller's memory is its own again
		wait(t, fmt.Sprintf("frame %d received", i), read)
		if q := <-got; !bytes.Equal(q, payload(f.n, uint64(i))) {
			t.Fatalf("frame %d of %d bytes (posted %v): the receiver read other bytes than were posted (WaitPosted returned before it had read them?)", i, f.n, posted)
		}
	}
	if posts == 0 {
		t.Skip("the link posted no payload here (it may not read its peer's memory)")
	}
	t.Logf("%d of %d frames posted", posts, len(frames))
	if err := poster.WaitPosted(ctx); err != nil {
		t.Fatalf("WaitPosted with nothing posted: %v", err)
	}
}

// testStartSend: a started send arrives as frames with the transfer's
// header, each with its own Offset and Len, whose payloads add up to the
// transfer's (an empty one as one header); a Send after it comes after
// it; and the payload stays the caller's until WaitPosted returns, after
// which the test overwrites it: the receiver must have got what was sent.
func testStartSend(t *testing.T, a, b transport.Link) {
	as, ok := a.(transport.AsyncSender)
	if !ok {
		t.Skip("link does not implement transport.AsyncSender")
	}
	ctx := opCtx(t)
	for i, n := range []int{0, 1, 5000, 1<<20 + 3, 8<<20 + 5} {
		h := header(uint64(i), n)
		h.Offset = 1 << 30
		p := payload(n, uint64(i))
		got := make(chan []byte, 1)
		read := async(func() error {
			time.Sleep(blockFor / 3) // the socket fills meanwhile
			q, err := recvTransfer(ctx, b, h)
			got <- q
			return err
		})
		if err := as.StartSend(ctx, &h, p); err != nil {
			t.Fatalf("StartSend of %d bytes: %v", n, err)
		}
		if err := as.WaitPosted(ctx); err != nil {
			t.Fatalf("WaitPosted after %d bytes: %v", n, err)
		}
		fill(p, ^uint64(i)) // the caller's memory is its own again
		wait(t, fmt.Sprintf("transfer of %d bytes", n), read)
		if q := <-got; !bytes.Equal(q, payload(n, uint64(i))) {
			t.Fatalf("transfer of %d bytes: other bytes than were sent (WaitPosted returned before they were written?)", n)
		}
	}
	// A Send right after a started send waits for it: frames stay in
	// order.
	n := 4<<20 + 1
	h := header(200, n)
	p := payload(n, 200)
	if err := as.StartSend(ctx, &h, p); err != nil {
		t.Fatal(err)
	}
	tail := header(201, 5)
	sent := async(func() error { return a.Send(ctx, &tail, []byte("after")) })
	if q, err := recvTransfer(ctx, b, h); err != nil || !bytes.Equal(q, p) {
		t.Fatalf("the started send before a Send: %v", err)
	}
	if gh, gp, err := recvFrame(ctx, b); err != nil || gh != tail || string(gp) != "after" {
		t.Fatalf("the frame sent after the started send: %+v %q, %v", gh, gp, err)
	}
	wait(t, "Send after StartSend", sent)
	if err := as.WaitPosted(ctx); err != nil {
		t.Fatal(err)
	}
}

// recvTransfer reads the frames of a started send of want.Len bytes with
// the header want, checking each frame's header.
func recvTransfer(ctx context.Context, l transport.Link, want wire.Header) ([]byte, error) {
	n := int(want.Len)
	got := make([]byte, n)
	for off, frames := 0, 0; off < n || frames == 0; frames++ {
		var h wire.Header
		if err := l.RecvHeader(ctx, &h); err != nil {
			return nil, err
		}
		w := want
		w.Offset, w.Len = want.Offset+uint64(off), h.Len
		if h != w || int(h.Len) > n-off || (n > 0 && h.Len == 0) {
			return nil, fmt.Errorf("frame %d: header %+v, want %+v with at most %d bytes", frames, h, w, n-off)
		}
		if err := l.RecvPayload(ctx, got[off:off+int(h.Len)]); err != nil {
			return nil, err
		}
		off += int(h.Len)
	}
	return got, nil
}

// testBackground: a started send far larger than the link's buffers is
// written whole, once Background was called, while the sending side does
// nothing more on the link (as a rank waiting on a receive over another
// transport): the receiver gets all of it before the sender calls
// WaitPosted.
func testBackground(t *testing.T, a, b transport.Link) {
	as, ok := a.(transport.AsyncSender)
	if !ok {
		t.Skip("link does not implement transport.AsyncSender")
	}
	ctx := opCtx(t)
	n := 32 << 20
	h := header(7, n)
	p := payload(n, 7)
	got := make(chan []byte, 1)
	read := async(func() error {
		q, err := recvTransfer(ctx, b, h)
		got <- q
		return err
	})
	if err := as.StartSend(ctx, &h, p); err != nil {
		t.Fatal(err)
	}
	as.Background()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(opTimeout / 2):
		t.Fatalf("%d bytes started and left to the background did not arrive in %v", n, opTimeout/2)
	}
	if q := <-got; !bytes.Equal(q, payload(n, 7)) {
		t.Fatal("the background wrote other bytes than were started")
	}
	if err := as.WaitPosted(ctx); err != nil {
		t.Fatalf("WaitPosted after the background wrote it all: %v", err)
	}
}

// arrivedWithin polls l.Arrived until it reports a frame, for up to d.
func arrivedWithin(l transport.Arriver, d time.Duration) (int, bool) {
	for deadline := time.Now().Add(d); ; {
		if n, ok := l.Arrived(); ok || time.Now().After(deadline) {
			return n, ok
		}
		goruntime.Gosched()
	}
}

// testArrived: Arrived reports nothing before anything is sent; once a
// frame is there whole it reports it with its payload length, without
// consuming it, and its read then does not wait; never while a frame
// larger than the link's buffers is still being sent; a posted payload
// (Poster) counts as there once its reference is; between a header and
// its payload, and after Shut, it reports -1 and ok (the read that follows
// goes on, or fails, at once).
func testArrived(t *testing.T, a, b transport.Link) {
	ar, ok := b.(transport.Arriver)
	if !ok {
		t.Skip("link does not implement transport.Arriver")
	}
	ctx := opCtx(t)
	if n, ok := ar.Arrived(); ok {
		t.Fatalf("Arrived on a link nothing was sent to: %d, %v", n, ok)
	}
	for i, n := range []int{0, 8, 100, 5000, 100000} {
		h := header(uint64(i), n)
		p := payload(n, uint64(i))
		sent := async(func() error { return a.Send(ctx, &h, p) })
		got, ok := arrivedWithin(ar, blockFor)
		if !ok {
			select {
			case err := <-sent:
				// Sent whole: it is there, and Arrived must say so.
				if err != nil {
					t.Fatal(err)
				}
				sent = async(func() error { return nil })
				got, ok = arrivedWithin(ar, releaseWithin)
				if !ok {
					t.Fatalf("a frame of %d bytes sent whole: Arrived never reported it", n)
				}
			default:
				// Larger than the link holds, so still being sent:
				// read it as usual.
				if gh, gp, err := recvFrame(ctx, b); err != nil || gh != h || !bytes.Equal(gp, p) {
					t.Fatalf("frame of %d bytes: %+v, %v", n, gh, err)
				}
				wait(t, "send", sent)
				continue
			}
		}
		if got != n {
			t.Fatalf("frame of %d bytes: Arrived says %d", n, got)
		}
		if again, ok := ar.Arrived(); !ok || again != n {
			t.Fatalf("Arrived again: %d, %v; it consumed the frame?", again, ok)
		}
		// Whole, so its Send is over; and the sender idle, a read that
		// waited would wait for ever.
		returnsWithin(t, fmt.Sprintf("the Send of the frame of %d bytes that arrived", n), func() error { return <-sent })
		returnsWithin(t, fmt.Sprintf("reading the frame of %d bytes that arrived", n), func() error {
			gh, gp, err := recvFrame(ctx, b)
			if err == nil && (gh != h || !bytes.Equal(gp, p)) {
				err = fmt.Errorf("frame %+v differs from what was sent", gh)
			}
			return err
		})
	}

	// A frame larger than any buffer: never whole while it is sent.
	big := 64 << 20
	h := header(50, big)
	bigPayload := payload(big, 50) // before the send: making it takes a while
	sent := async(func() error { return a.Send(ctx, &h, bigPayload) })
	for deadline := time.Now().Add(blockFor); time.Now().Before(deadline); {
		if n, ok := ar.Arrived(); ok {
			t.Fatalf("Arrived reported a frame (%d bytes) of %d still being sent", n, big)
		}
		time.Sleep(time.Millisecond)
	}
	if gh, gp, err := recvFrame(ctx, b); err != nil || gh != h || !bytes.Equal(gp, bigPayload) {
		t.Fatalf("the large frame: %+v, %v", gh, err)
	}
	wait(t, "large send", sent)

	if poster, ok := a.(transport.Poster); ok {
		n := 1 << 20
		h := header(60, n)
		p := payload(n, 60)
		posted, err := poster.TryPost(ctx, &h, p, false)
		if err != nil {
			t.Fatal(err)
		}
		if posted {
			if got, ok := arrivedWithin(ar, releaseWithin); !ok || got != n {
				t.Fatalf("posted %d bytes: Arrived %d, %v", n, got, ok)
			}
			returnsWithin(t, "reading the posted frame that arrived", func() error {
				gh, gp, err := recvFrame(ctx, b)
				if err == nil && (gh != h || !bytes.Equal(gp, p)) {
					err = errors.New("the posted frame differs from what was sent")
				}
				return err
			})
			if err := poster.WaitPosted(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	h = header(70, 16)
	if err := a.Send(ctx, &h, payload(16, 70)); err != nil {
		t.Fatal(err)
	}
	var gh wire.Header
	if err := b.RecvHeader(ctx, &gh); err != nil {
		t.Fatal(err)
	}
	if n, ok := ar.Arrived(); n != -1 || !ok {
		t.Errorf("between a header and its payload: Arrived %d, %v; want -1, true", n, ok)
	}
	if err := b.RecvPayload(ctx, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	b.Shut()
	if n, ok := ar.Arrived(); n != -1 || !ok {
		t.Errorf("after Shut: Arrived %d, %v; want -1, true", n, ok)
	}
}

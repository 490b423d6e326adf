package shmlink

import (
	"bytes"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// TestArrived checks what Arrived says of each kind of frame: nothing yet,
// a frame in a fast box, one in the ring, a payload posted in place, one
// larger than the ring (the header is there but not the whole payload),
// between a header and its payload, and after Close; and that it consumes
// nothing (the frames then read back whole and in order).
func TestArrived(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	const ringBytes = 64 << 10
	l, d := pair(t, ringBytes)
	want := func(step string, wantLen int, wantOK bool) {
		t.Helper()
		if n, ok := l.Arrived(); n != wantLen && ok || ok != wantOK {
			t.Fatalf("%s: Arrived() = %d, %v; want %d, %v", step, n, ok, wantLen, wantOK)
		}
	}
	recv := func(step string, p []byte) {
		t.Helper()
		h, got, err := recvOne(ctx, l)
		if err != nil || int(h.Len) != len(p) || !bytes.Equal(got, p) {
			t.Fatalf("%s: received %d bytes (header says %d), %v; want the %d sent", step, len(got), h.Len, err, len(p))
		}
	}
	want("nothing sent", 0, false)

	for _, n := range []int{0, 8, 4 << 10} { // fast boxes, then the ring
		p := patterned(n, byte(n))
		if err := d.Send(ctx, &wire.Header{Len: uint32(n)}, p); err != nil {
			t.Fatal(err)
		}
		want("sent", n, true)
		want("asked again", n, true)
		recv("sent", p)
		want("read", 0, false)
	}

	posted := patterned(DirectMin, 7)
	if ok, err := d.TryPost(ctx, &wire.Header{Len: uint32(len(posted))}, posted, false); !ok || err != nil {
		t.Fatalf("TryPost: %v, %v", ok, err)
	}
	want("posted", len(posted), true)
	recv("posted", posted)
	if err := d.WaitPosted(ctx); err != nil {
		t.Fatal(err)
	}

	big := patterned(3*ringBytes, 9)
	sent := make(chan error, 1)
	go func() { sent <- d.Send(ctx, &wire.Header{Len: uint32(len(big))}, big) }()
	for deadline := time.Now().Add(10 * time.Second); l.rx.Buffered() < ringBytes/2; {
		if time.Now().After(deadline) {
			t.Fatal("the sender committed nothing")
		}
		time.Sleep(time.Millisecond)
	}
	want("larger than the ring", 0, false)
	var h wire.Header
	if err := l.RecvHeader(ctx, &h); err != nil {
		t.Fatal(err)
	}
	want("between header and payload", -1, true)
	got := make([]byte, len(big))
	if err := l.RecvPayload(ctx, got); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("payload larger than the ring: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}

	l.Close()
	want("closed", -1, true)
}

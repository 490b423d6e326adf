package tcplink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// loopbackPair returns two links over a loopback TCP connection whose
// socket buffers are fixed at 64 KiB (the kernel doubles that, and would
// otherwise grow them to MiBs), so that a send of a MiB cannot go out at
// once. Smaller buffers make loopback TCP stall on its persist timer.
func loopbackPair(t *testing.T, peerA, peerB int) (a, b *Link) {
	t.Helper()
	return loopbackPairWith(t, peerA, peerB, Config{}, Config{})
}

// loopbackPairWith is loopbackPair with the links made as cfgA (a, the
// link of rank peerA) and cfgB say.
func loopbackPairWith(t *testing.T, peerA, peerB int, cfgA, cfgB Config) (a, b *Link) {
	t.Helper()
	ac, dc := loopbackConns(t)
	for _, c := range []net.Conn{ac, dc} {
		tc := c.(*net.TCPConn)
		tc.SetReadBuffer(64 << 10)
		tc.SetWriteBuffer(64 << 10)
	}
	a, b = cfgA.New(ac, peerB), cfgB.New(dc, peerA)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// recvTransfer reads frames from l until n payload bytes of the transfer
// with header want have arrived, checking each frame's header.
func recvTransfer(ctx context.Context, l *Link, want wire.Header, n int) ([]byte, int, error) {
	got := make([]byte, n)
	frames := 0
	for off := 0; off < n || frames == 0; frames++ {
		var h wire.Header
		if err := l.RecvHeader(ctx, &h); err != nil {
			return nil, frames, err
		}
		w := want
		w.Offset, w.Len = uint64(off), h.Len
		if h != w || int(h.Len) > n-off || (n > 0 && h.Len == 0) {
			return nil, frames, fmt.Errorf("frame %d: header %+v, want %+v with at most %d bytes", frames, h, w, n-off)
		}
		if err := l.RecvPayload(ctx, got[off:off+int(h.Len)]); err != nil {
			return nil, frames, err
		}
		off += int(h.Len)
	}
	return got, frames, nil
}

func payload(n, seed int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i>>9 + seed)
	}
	return p
}

// TestStartSendRing runs the schedule that needs started sends to progress
// while their rank waits on another link: three ranks in a ring, each
// starting a send to its right neighbour larger than the sockets hold and
// then receiving from its left one, as a ring step does. Nobody reads a
// link that it writes, so without the progress made by reads (spinning)
// or by the flushers (parking) every rank would wait for ever on a full
// socket. Each rank's two links are a group of their own, as a rank's are
// in a job. It runs both ways: parking at once, and spinning.
func TestStartSendRing(t *testing.T) {
	for _, spin := range []time.Duration{0, 200 * time.Microsecond} {
		t.Run(fmt.Sprintf("spin=%v", spin), func(t *testing.T) {
			const ranks, n = 3, 3<<20 + 5
			cfg := make([]Config, ranks)
			for r := range cfg {
				cfg[r] = Config{Spin: spin, Group: new(Group)}
			}
			// right[r] is rank r's link to r+1, left[r] its link to r-1.
			right, left := make([]*Link, ranks), make([]*Link, ranks)
			for r := range ranks {
				next := (r + 1) % ranks
				right[r], left[next] = loopbackPairWith(t, r, next, cfg[r], cfg[next])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs := make(chan error, ranks)
			for r := range ranks {
				go func() {
					src := payload(n, r)
					h := wire.Header{Seq: 9, Src: uint32(r), Step: 1, Len: n}
					if err := right[r].StartSend(ctx, &h, src); err != nil {
						errs <- fmt.Errorf("rank %d: start: %w", r, err)
						return
					}
					from := (r + ranks - 1) % ranks
					want := wire.Header{Seq: 9, Src: uint32(from), Step: 1}
					got, frames, err := recvTransfer(ctx, left[r], want, n)
					if err != nil {
						errs <- fmt.Errorf("rank %d: receive: %w", r, err)
						return
					}
					if !bytes.Equal(got, payload(n, from)) {
						errs <- fmt.Errorf("rank %d: wrong bytes from rank %d", r, from)
						return
					}
					if wantFrames := (n + frameBytes - 1) / frameBytes; frames != wantFrames {
						errs <- fmt.Errorf("rank %d: %d frames, want %d of at most %d bytes", r, frames, wantFrames, frameBytes)
						return
					}
					errs <- right[r].WaitPosted(ctx)
				}()
			}
			for range ranks {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestStartSendFrames: a started send arrives in frames of frameBytes with
// the transfer's offsets, an empty one as one header, a small one whole;
// and a Send after a started one waits for it, so that frames stay in
// order.
func TestStartSendFrames(t *testing.T) {
	a, b := loopbackPair(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, n := range []int{0, 1, smallFrame, smallFrame + 1, frameBytes, 2*frameBytes + 3} {
		src := payload(n, n)
		h := wire.Header{Seq: 3, Step: uint32(n), Offset: 0, Len: uint32(n)}
		if err := a.StartSend(ctx, &h, src); err != nil {
			t.Fatal(err)
		}
		tail := []byte("after")
		th := wire.Header{Seq: 4, Len: uint32(len(tail))}
		sent := make(chan error, 1)
		go func() { sent <- a.Send(ctx, &th, tail) }()
		got, _, err := recvTransfer(ctx, b, h, n)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("%d bytes: wrong bytes", n)
		}
		tailGot, _, err := recvTransfer(ctx, b, wire.Header{Seq: 4}, len(tail))
		if err != nil || string(tailGot) != "after" {
			t.Fatalf("%d bytes: the frame sent after: %q, %v", n, tailGot, err)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		if err := a.WaitPosted(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStartSendClosed: closing a link with a started send that the peer
// never reads fails WaitPosted, and the sends after it, instead of
// leaving them waiting.
func TestStartSendClosed(t *testing.T) {
	a, _ := loopbackPair(t, 0, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := wire.Header{Len: 4 << 20}
	if err := a.StartSend(ctx, &h, payload(4<<20, 1)); err != nil {
		t.Fatal(err)
	}
	a.group.handOff() // as a read that parks would: the flusher takes it
	waited := make(chan error, 1)
	go func() { waited <- a.WaitPosted(ctx) }()
	time.Sleep(20 * time.Millisecond)
	a.Close()
	select {
	case err := <-waited:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("WaitPosted after Close: %v, want net.ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("WaitPosted did not return after Close")
	}
	if err := a.StartSend(ctx, &wire.Header{}, nil); err == nil {
		t.Fatal("StartSend on a closed link succeeded")
	}
}

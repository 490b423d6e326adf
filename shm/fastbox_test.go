package shm

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// testFrame is frame i of a stream: its index, its length and a pattern.
func testFrame(i, n int) []byte {
	f := pattern(n, uint64(i))
	if n >= 8 {
		binary.LittleEndian.PutUint32(f, uint32(i))
		binary.LittleEndian.PutUint32(f[4:], uint32(n))
	}
	return f
}

// sendFrame sends f through a fast box when one takes it, else through the
// ring, and reports which.
func sendFrame(ctx context.Context, t *testing.T, p *Ring, f []byte) (boxed bool) {
	t.Helper()
	if b := p.FastSlot(len(f)); b != nil {
		copy(b, f)
		p.CommitFast(len(f))
		return true
	}
	if err := p.Write(ctx, f); err != nil {
		t.Errorf("ring write: %v", err)
	}
	return false
}

// recvFrame reads the next frame of n bytes from whichever way it came.
func recvFrame(ctx context.Context, c *Ring, n int) ([]byte, bool, error) {
	for {
		box, inRing := c.NextFrame()
		if box != nil {
			f := bytes.Clone(box)
			c.ReleaseFast()
			return f, true, nil
		}
		if inRing {
			f := make([]byte, n)
			err := c.Read(ctx, f)
			return f, false, err
		}
		if err := c.AwaitFrame(ctx); err != nil {
			return nil, false, err
		}
	}
}

// TestFastBoxOrder streams frames of random sizes, small ones through fast
// boxes while one is free and everything else through a small ring, with a
// consumer that now and then falls behind (so boxes fill up and small
// frames take the ring, between boxed ones): every frame must come out
// once, whole, in order.
func TestFastBoxOrder(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	prod, cons := ringPair(t, 4096)
	const frames = 20000
	sizes := make([]int, frames)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range sizes {
		if rng.IntN(3) == 0 {
			sizes[i] = 8 + rng.IntN(1000)
		} else {
			sizes[i] = 8 + rng.IntN(FastFrameMax-7)
		}
	}
	var boxed int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, n := range sizes {
			if sendFrame(ctx, t, prod, testFrame(i, n)) {
				boxed++
			}
		}
	}()
	var ringSmall int
	for i, n := range sizes {
		if i%500 == 0 {
			time.Sleep(time.Millisecond) // fall behind: the boxes fill
		}
		f, viaBox, err := recvFrame(ctx, cons, n)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(f, testFrame(i, n)) {
			t.Fatalf("frame %d (%d bytes, box %v): got index %d, %d bytes", i, n, viaBox, binary.LittleEndian.Uint32(f), len(f))
		}
		if !viaBox && n <= FastFrameMax {
			ringSmall++
		}
	}
	wg.Wait()
	t.Logf("%d frames, %d through fast boxes, %d small ones through the ring", frames, boxed, ringSmall)
	if boxed == 0 || ringSmall == 0 {
		t.Errorf("boxed %d, small through the ring %d: the test did not mix the two ways", boxed, ringSmall)
	}
}

// TestFastBoxFull: with every box taken the producer gets none and the
// frame goes through the ring, after the boxed ones; boxes come back as the
// consumer takes them.
func TestFastBoxFull(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	prod, cons := ringPair(t, 4096)
	for i := range fastSlots {
		if !sendFrame(ctx, t, prod, testFrame(i, 16)) {
			t.Fatalf("frame %d of %d: no fast box", i, fastSlots)
		}
	}
	if prod.FastSlot(16) != nil {
		t.Fatal("a fast box beyond the last one")
	}
	if sendFrame(ctx, t, prod, testFrame(fastSlots, 16)) {
		t.Fatal("the frame after a full set of boxes took a box")
	}
	for i := range fastSlots + 1 {
		f, viaBox, err := recvFrame(ctx, cons, 16)
		if err != nil || !bytes.Equal(f, testFrame(i, 16)) || viaBox != (i < fastSlots) {
			t.Fatalf("frame %d: %x, box %v, %v", i, f, viaBox, err)
		}
	}
	if !sendFrame(ctx, t, prod, testFrame(0, 16)) {
		t.Fatal("no fast box after the consumer took them all")
	}
	if prod.FastSlot(FastFrameMax+1) != nil {
		t.Fatalf("a fast box for %d bytes", FastFrameMax+1)
	}
}

// TestFastBoxClose: frames boxed before the producer closed are read, then
// the consumer gets ErrPeerClosed; a closed ring hands out no box.
func TestFastBoxClose(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	prod, cons := ringPair(t, 4096)
	sendFrame(ctx, t, prod, testFrame(0, 8))
	sendFrame(ctx, t, prod, testFrame(1, 1000))
	sendFrame(ctx, t, prod, testFrame(2, 8))
	prod.Close()
	if prod.FastSlot(8) != nil {
		t.Error("a closed ring handed out a fast box")
	}
	for i, n := range []int{8, 1000, 8} {
		if f, _, err := recvFrame(ctx, cons, n); err != nil || !bytes.Equal(f, testFrame(i, n)) {
			t.Fatalf("frame %d: %x, %v", i, f, err)
		}
	}
	if _, _, err := recvFrame(ctx, cons, 8); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("after the last frame: %v, want ErrPeerClosed", err)
	}
}

// TestFastBoxWakesSleeper: a consumer asleep in AwaitFrame is woken by a
// boxed frame (the producer bumps the futex word for it), and a ping-pong
// of boxed frames between two sleeping sides does not lose wake-ups: a
// lost one costs a WakePeriod, 400 of them would outlast the context.
func TestFastBoxWakesSleeper(t *testing.T) {
	ctx := testCtx(t, 15*time.Second)
	asleep := WaitPolicy{WakePeriod: WakePeriod} // no spin: to sleep at once
	prod, cons := ringPairWith(t, 4096, asleep)
	woken := false
	for attempt := 0; attempt < 5 && !woken; attempt++ {
		done := make(chan error, 1)
		go func() { done <- cons.AwaitFrame(ctx) }()
		time.Sleep(WakePeriod / 2) // asleep in the futex by now
		ev := cons.dataEv.Load()
		sendFrame(ctx, t, prod, testFrame(attempt, 8))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// The sleeper may have been between two sleeps; then it found
		// the frame without a wake-up, and the test looks again.
		woken = cons.dataEv.Load() != ev
		if _, _, err := recvFrame(ctx, cons, 8); err != nil {
			t.Fatal(err)
		}
	}
	if !woken {
		t.Error("a boxed frame never woke the sleeping consumer")
	}

	aProd, aCons := ringPairWith(t, 4096, asleep)
	bProd, bCons := ringPairWith(t, 4096, asleep)
	const rounds = 400
	go func() {
		for i := 0; i < rounds; i++ {
			f, _, err := recvFrame(ctx, aCons, 8)
			if err != nil {
				t.Errorf("echo %d: %v", i, err)
				return
			}
			sendFrame(ctx, t, bProd, f)
		}
	}()
	start := time.Now()
	for i := 0; i < rounds; i++ {
		sendFrame(ctx, t, aProd, testFrame(i, 8))
		if f, _, err := recvFrame(ctx, bCons, 8); err != nil || !bytes.Equal(f, testFrame(i, 8)) {
			t.Fatalf("round %d: %x, %v", i, f, err)
		}
	}
	t.Logf("%d sleeping round trips in %v", rounds, time.Since(start))
}

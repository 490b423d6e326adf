package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// writerOf is the producer's ShareWriter over payload, which lies in this
// process (the tests' producer and consumer are one process).
func writerOf(payload []byte) ShareWriter {
	return func(dst, src uint64, n int) error {
		off := int(src - Addr(payload))
		if off < 0 || off+n > len(payload) {
			return fmt.Errorf("%d bytes at %#x: not of the payload", n, src)
		}
		return WriteProcess(os.Getpid(), payload[off:off+n], dst)
	}
}

// readBack is the consumer's side of a shared read of payload into dst:
// pieces from the back until none is left, then the producer's.
func readBack(t *testing.T, cons *Ring, payload, dst []byte, piece int) (front int, err error) {
	t.Helper()
	cons.OfferShare(Addr(payload), Addr(dst), len(dst), piece)
	for {
		off, n, ok := cons.ClaimBack()
		if !ok {
			break
		}
		if err := ReadProcess(os.Getpid(), dst[off:off+n], Addr(payload)+uint64(off)); err != nil {
			t.Fatal(err)
		}
	}
	return cons.AwaitShare(testCtx(t, 20*time.Second))
}

// TestShareProducerFirst: a producer that takes the offer before the
// consumer writes every piece, the last one short; the consumer then
// finds none left and its wait returns at once with the producer's bytes.
func TestShareProducerFirst(t *testing.T) {
	prod, cons := ringPair(t, 1<<12)
	payload := pattern(5*4096+17, 1)
	dst := make([]byte, len(payload))
	cons.OfferShare(Addr(payload), Addr(dst), len(dst), 4096)
	if !prod.shareOffered() {
		t.Fatal("the producer does not see the offer")
	}
	prod.takeShares(writerOf(payload))
	if prod.shareOffered() {
		t.Fatal("pieces left after the producer took them")
	}
	if _, _, ok := cons.ClaimBack(); ok {
		t.Fatal("the consumer claimed a piece the producer took")
	}
	front, err := cons.AwaitShare(testCtx(t, 20*time.Second))
	if err != nil || front != len(dst) {
		t.Fatalf("AwaitShare: %d bytes, %v; want %d", front, err, len(dst))
	}
	if !bytes.Equal(dst, payload) {
		t.Fatal("bytes differ")
	}
}

// TestShareWhileAwaitingAcks: a producer waiting in AwaitAcks, awake or
// asleep, writes pieces of the consumer's offers, which arrive intact
// whatever part each side copied; offers of every size, one after another,
// keep apart.
func TestShareWhileAwaitingAcks(t *testing.T) {
	prod, cons := ringPair(t, 1<<12)
	ctx := testCtx(t, 60*time.Second)
	sizes := []int{1, 4095, 4096, 4097, 64<<10 + 3, 1 << 20}
	done := make(chan error, 1)
	payloads := make(chan []byte, 1)
	go func() {
		for i := range sizes {
			p := <-payloads
			if err := prod.AwaitAcks(ctx, uint64(i+1), writerOf(p)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i, n := range sizes {
		payload := pattern(n, uint64(i))
		dst := make([]byte, n)
		payloads <- payload
		if i%2 == 1 {
			time.Sleep(20 * time.Millisecond) // past the spin: the producer sleeps
		}
		front, err := readBack(t, cons, payload, dst, 4096)
		if err != nil || front < 0 || front > n {
			t.Fatalf("%d bytes: AwaitShare %d, %v", n, front, err)
		}
		if !bytes.Equal(dst, payload) {
			t.Fatalf("%d bytes (the producer's %d): bytes differ", n, front)
		}
		cons.Ack()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestShareBroken: a producer that cannot write its pieces says so; the
// consumer learns which bytes were the producer's, and offers no more.
func TestShareBroken(t *testing.T) {
	prod, cons := ringPair(t, 1<<12)
	payload := pattern(8*4096, 2)
	dst := make([]byte, len(payload))
	cons.OfferShare(Addr(payload), Addr(dst), len(dst), 4096)
	refuse := func(dst, src uint64, n int) error { return errors.New("refused") }
	prod.takeShares(refuse)
	front, err := cons.AwaitShare(testCtx(t, 20*time.Second))
	if !errors.Is(err, ErrShareBroken) || front != len(dst) || !cons.ShareBroken() {
		t.Fatalf("AwaitShare: %d bytes, %v, broken %v; want %d, ErrShareBroken", front, err, cons.ShareBroken(), len(dst))
	}
	if bytes.Count(dst, []byte{0}) != len(dst) {
		t.Fatal("a refused piece was written")
	}
	// A payload the producer did not hand over is refused likewise.
	other := pattern(4096, 3)
	if err := writerOf(other)(Addr(dst), Addr(payload), 4096); err == nil {
		t.Fatal("the writer wrote bytes not of its payload")
	}
}

// TestShareClosed: a consumer waiting for the producer's pieces fails once
// the ring closes rather than waiting on.
func TestShareClosed(t *testing.T) {
	prod, cons := ringPair(t, 1<<12)
	payload := pattern(2*4096, 4)
	dst := make([]byte, len(payload))
	cons.OfferShare(Addr(payload), Addr(dst), len(dst), 4096)
	// The producer takes a piece and stops (its process died, say): a
	// taken piece that is never counted.
	c := prod.shares.cursor.Load()
	gen, front, back := splitCursor(c)
	if !prod.shares.cursor.CompareAndSwap(c, cursorOf(gen, front+1, back)) {
		t.Fatal("cursor moved")
	}
	for {
		if _, _, ok := cons.ClaimBack(); !ok {
			break
		}
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		prod.Close()
	}()
	start := time.Now()
	if _, err := cons.AwaitShare(testCtx(t, 20*time.Second)); err == nil {
		t.Fatal("AwaitShare succeeded without the producer's piece")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("AwaitShare took %v", d)
	}
	// A consumer asleep for the piece is woken by the close itself (the
	// event word it sleeps on moves), not left to its periodic look.
	prod2, cons2 := ringPair(t, 1<<12)
	ev := cons2.shares.ev.Load()
	prod2.Close()
	if cons2.shares.ev.Load() == ev {
		t.Fatal("Close did not bump the event word of a consumer waiting for shares")
	}
}

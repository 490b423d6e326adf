package shm

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"
)

// TestProbeProducer: a consumer that can read the producer's memory (here
// its own process) marks the ring Direct; one that reads the wrong process,
// or a ring whose producer published nothing, does not.
func TestProbeProducer(t *testing.T) {
	prod, cons := ringPair(t, 1<<12)
	if err := cons.ProbeProducer(os.Getpid()); !errors.Is(err, ErrNotDirect) || cons.Direct() {
		t.Fatalf("probe before PublishAddr: %v, direct %v", err, cons.Direct())
	}
	prod.PublishAddr()
	// A process that does not exist (pid_max is at most 2^22).
	if err := cons.ProbeProducer(1 << 23); !errors.Is(err, ErrNotDirect) || cons.Direct() {
		t.Fatalf("probe of a process that does not exist: %v, direct %v", err, cons.Direct())
	}
	if err := cons.ProbeProducer(os.Getpid()); err != nil || !cons.Direct() || !prod.Direct() {
		t.Fatalf("probe of this process: %v, direct %v/%v", err, cons.Direct(), prod.Direct())
	}
}

func TestReadProcess(t *testing.T) {
	src := pattern(300<<10+7, 3)
	dst := make([]byte, len(src))
	if err := ReadProcess(os.Getpid(), dst, Addr(src)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dst, src) {
		t.Fatal("bytes differ")
	}
	if err := ReadProcess(1<<23, dst[:8], Addr(src)); !errors.Is(err, ErrPeerGone) {
		t.Fatalf("read from a process that does not exist: %v, want ErrPeerGone", err)
	}
	if err := ReadProcess(os.Getpid(), dst[:8], 8); err == nil {
		t.Fatal("read from address 8 succeeded")
	}
}

// TestAcks: AwaitAcks returns once the consumer has acknowledged as many
// payloads as asked, from a sleep too; a close fails it when acknowledgements
// are missing and not when they arrived first.
func TestAcks(t *testing.T) {
	prod, cons := ringPair(t, 1<<12)
	ctx := testCtx(t, 20*time.Second)
	cons.Ack()
	if err := prod.AwaitAcks(ctx, 1, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- prod.AwaitAcks(ctx, 3, nil) }()
	cons.Ack()
	time.Sleep(100 * time.Millisecond) // past the spin: the producer sleeps
	select {
	case err := <-done:
		t.Fatalf("AwaitAcks(3) returned after 2 acks: %v", err)
	default:
	}
	woken := time.Now()
	cons.Ack()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(woken); d > WakePeriod/2 {
		t.Errorf("woken %v after the ack: the ack did not wake it", d)
	}

	go func() { done <- prod.AwaitAcks(ctx, 4, nil) }()
	time.Sleep(50 * time.Millisecond)
	cons.Close()
	if err := <-done; !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("AwaitAcks across the consumer's close: %v, want ErrPeerClosed", err)
	}
	if err := prod.AwaitAcks(ctx, 3, nil); err != nil {
		t.Fatalf("acks that came before the close: %v", err)
	}
}

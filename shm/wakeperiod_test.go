package shm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCrowdWakePeriodCancel: with the crowded host's long wake period a
// sleeping consumer still returns at once when its context ends (the
// context wakes it), and a commit still wakes it at once.
func TestCrowdWakePeriodCancel(t *testing.T) {
	SetWakePeriod(CrowdWakePeriod)
	t.Cleanup(func() { SetWakePeriod(WakePeriod) })
	if got := time.Duration(wakePeriod.Load()); got != CrowdWakePeriod {
		t.Fatalf("wake period %v, want %v", got, CrowdWakePeriod)
	}
	prod, cons := ringPair(t, 4096)
	ctx, cancel := context.WithCancel(testCtx(t, 10*time.Second))
	errc := make(chan error, 1)
	go func() {
		_, err := cons.Peek(ctx, 1)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // asleep in the futex by now
	start := time.Now()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if el := time.Since(start); el > CrowdWakePeriod/2 {
			t.Errorf("cancel noticed after %v, a wake period %v", el, CrowdWakePeriod)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("still asleep 5 s after the cancel")
	}

	go func() {
		b, err := cons.Peek(testCtx(t, 10*time.Second), 1)
		if err == nil && len(b) == 0 {
			err = errors.New("woke with nothing")
		}
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	start = time.Now()
	if err := prod.Write(testCtx(t, 5*time.Second), []byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > CrowdWakePeriod/2 {
		t.Errorf("commit noticed after %v", el)
	}
	SetWakePeriod(time.Millisecond)
	if got := time.Duration(wakePeriod.Load()); got != WakePeriod {
		t.Errorf("SetWakePeriod(1ms) gave %v, want at least %v", got, WakePeriod)
	}
}

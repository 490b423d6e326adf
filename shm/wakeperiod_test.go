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
	prod, cons := ringPairWith(t, 4096, WaitPolicy{WakePeriod: CrowdWakePeriod})
	if got := cons.policy.WakePeriod; got != CrowdWakePeriod {
		t.Fatalf("wake period %v, want %v", got, CrowdWakePeriod)
	}
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
}

// TestWaitPolicyResolved: the zero policy is the default one, any other is
// taken as it is but for a wake period below WakePeriod and negative
// durations; and each side of a ring keeps its own.
func TestWaitPolicyResolved(t *testing.T) {
	for _, tt := range []struct {
		in, want WaitPolicy
	}{
		{WaitPolicy{}, WaitPolicy{Spin: DefaultSpin, WakePeriod: WakePeriod}},
		{WaitPolicy{Spin: 200 * time.Microsecond}, WaitPolicy{Spin: 200 * time.Microsecond, WakePeriod: WakePeriod}},
		{WaitPolicy{Yield: 100 * time.Microsecond}, WaitPolicy{Yield: 100 * time.Microsecond, WakePeriod: WakePeriod}},
		{WaitPolicy{WakePeriod: time.Millisecond}, WaitPolicy{WakePeriod: WakePeriod}},
		{WaitPolicy{Spin: -1, Yield: -1, WakePeriod: CrowdWakePeriod}, WaitPolicy{WakePeriod: CrowdWakePeriod}},
	} {
		if got := tt.in.resolved(); got != tt.want {
			t.Errorf("%+v resolved to %+v, want %+v", tt.in, got, tt.want)
		}
	}
	seg, err := Create(RingBytes(4096), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	spin := WaitPolicy{Spin: time.Second}
	prod, err := NewRing(seg.Bytes(), 4096, spin)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := OpenRing(seg.Bytes(), WaitPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if prod.policy != spin.resolved() || cons.policy != (WaitPolicy{}).resolved() {
		t.Errorf("producer waits %+v, consumer %+v: want %+v and the default", prod.policy, cons.policy, spin.resolved())
	}
}

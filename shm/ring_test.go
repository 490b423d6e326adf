package shm

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testCtx returns a context that ends before the test's own deadline, so a
// hang shows up as a failed call rather than a killed binary.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	if dl, ok := t.Deadline(); ok && time.Until(dl) < d+5*time.Second {
		d = time.Until(dl) - 5*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// ringPair lays a ring out in a fresh segment and returns two handles on
// it, as the two processes would hold them.
func ringPair(t *testing.T, capacity int) (prod, cons *Ring) {
	t.Helper()
	return ringPairWith(t, capacity, WaitPolicy{})
}

// ringPairWith is ringPair with both sides waiting as wait says.
func ringPairWith(t *testing.T, capacity int, wait WaitPolicy) (prod, cons *Ring) {
	t.Helper()
	seg, err := Create(RingBytes(capacity), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { seg.Close() })
	prod, err = NewRing(seg.Bytes(), capacity, wait)
	if err != nil {
		t.Fatal(err)
	}
	cons, err = OpenRing(seg.Bytes(), wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prod.Close(); cons.Close() })
	return prod, cons
}

func pattern(n int, seed uint64) []byte {
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

func TestRingRejectsBadLayouts(t *testing.T) {
	mem := make([]byte, RingBytes(1<<16))
	tests := []struct {
		name     string
		mem      []byte
		capacity int
	}{
		{"not a power of two", mem, 3000},
		{"too small", mem, 128},
		{"memory too short", mem[:RingBytes(1<<15)], 1 << 16},
	}
	for _, tt := range tests {
		if _, err := NewRing(tt.mem, tt.capacity, WaitPolicy{}); err == nil {
			t.Errorf("%s: NewRing succeeded", tt.name)
		}
	}
	if _, err := OpenRing(make([]byte, RingBytes(4096)), WaitPolicy{}); err == nil {
		t.Error("OpenRing of zeroed memory succeeded")
	}
	if _, err := NewRing(mem, 1<<16, WaitPolicy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRing(mem[:RingBytes(1<<15)], WaitPolicy{}); err == nil {
		t.Error("OpenRing of a truncated mapping succeeded")
	}
}

// TestRingStream moves a pattern through rings of several sizes with
// producer and consumer in different goroutines and random piece sizes,
// through both APIs (Write/Read and Reserve/Commit/Peek/Release).
func TestRingStream(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		total    int
		maxPiece int
		inPlace  bool
	}{
		{"min ring, tiny pieces", MinRingCapacity, 1 << 20, 7, false},
		{"4 KiB ring, pieces larger than the ring", 4096, 4 << 20, 20000, false},
		{"4 KiB ring, in place", 4096, 4 << 20, 3000, true},
		{"1 MiB ring, large pieces", 1 << 20, 32 << 20, 3 << 20, false},
		{"1 MiB ring, in place", 1 << 20, 32 << 20, 1 << 20, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t, 30*time.Second)
			prod, cons := ringPair(t, tt.capacity)
			src := pattern(tt.total, uint64(tt.capacity))
			errc := make(chan error, 1)
			go func() {
				rng := rand.New(rand.NewPCG(1, 2))
				p := src
				for len(p) > 0 {
					n := min(len(p), 1+rng.IntN(tt.maxPiece))
					if tt.inPlace {
						b, err := prod.Reserve(ctx, n)
						if err != nil {
							errc <- err
							return
						}
						prod.Commit(copy(b, p[:n]))
						n = min(n, len(b))
					} else if err := prod.Write(ctx, p[:n]); err != nil {
						errc <- err
						return
					}
					p = p[n:]
				}
				errc <- nil
			}()
			dst := make([]byte, 0, tt.total)
			rng := rand.New(rand.NewPCG(3, 4))
			for len(dst) < tt.total {
				n := min(tt.total-len(dst), 1+rng.IntN(tt.maxPiece))
				if tt.inPlace {
					b, err := cons.Peek(ctx, n)
					if err != nil {
						t.Fatalf("peek at %d: %v", len(dst), err)
					}
					dst = append(dst, b...)
					cons.Release(len(b))
				} else {
					piece := dst[len(dst) : len(dst)+n]
					if err := cons.Read(ctx, piece); err != nil {
						t.Fatalf("read at %d: %v", len(dst), err)
					}
					dst = dst[:len(dst)+n]
				}
			}
			if err := <-errc; err != nil {
				t.Fatalf("producer: %v", err)
			}
			if !bytes.Equal(dst, src) {
				t.Fatal("bytes differ")
			}
			if b := cons.Buffered(); b != 0 {
				t.Errorf("%d bytes left over", b)
			}
		})
	}
}

func TestRingReservationIsContiguousAndCapped(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	prod, cons := ringPair(t, 4096)
	b, err := prod.Reserve(ctx, 1<<20)
	if err != nil || len(b) != 4096 {
		t.Fatalf("reserve on an empty ring: %d bytes, %v", len(b), err)
	}
	prod.Commit(4000)
	if p, err := cons.Peek(ctx, 10000); err != nil || len(p) != 4000 {
		t.Fatalf("peek: %d bytes, %v", len(p), err)
	}
	cons.Release(4000)
	// 96 bytes remain before the end of the data area: the reservation
	// stops there, and the next one starts at the beginning.
	if b, _ := prod.Reserve(ctx, 1000); len(b) != 96 {
		t.Fatalf("reserve at the wrap: %d bytes, want 96", len(b))
	}
	prod.Commit(96)
	if b, _ := prod.Reserve(ctx, 1000); len(b) != 1000 {
		t.Fatalf("reserve after the wrap: %d bytes, want 1000", len(b))
	}
}

// TestRingClose covers every way a blocked side is released.
func TestRingClose(t *testing.T) {
	gone := errors.New("test cause")
	tests := []struct {
		name    string
		block   string // which side blocks: "consumer" (empty ring) or "producer" (full ring)
		pending int    // bytes committed before the release, which a consumer must still get
		release func(prod, cons *Ring, cancel context.CancelFunc)
		want    error
	}{
		{"consumer, own close", "consumer", 0, func(_, c *Ring, _ context.CancelFunc) { c.Close() }, ErrClosed},
		{"consumer, peer close", "consumer", 0, func(p, _ *Ring, _ context.CancelFunc) { p.Close() }, ErrPeerClosed},
		{"consumer, peer close after data", "consumer", 100, func(p, _ *Ring, _ context.CancelFunc) { p.Close() }, ErrPeerClosed},
		{"consumer, abort", "consumer", 10, func(_, c *Ring, _ context.CancelFunc) { c.Abort(gone) }, ErrPeerGone},
		{"consumer, cancel", "consumer", 0, func(_, _ *Ring, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"producer, own close", "producer", 0, func(p, _ *Ring, _ context.CancelFunc) { p.Close() }, ErrClosed},
		{"producer, peer close", "producer", 0, func(_, c *Ring, _ context.CancelFunc) { c.Close() }, ErrPeerClosed},
		{"producer, abort", "producer", 0, func(p, _ *Ring, _ context.CancelFunc) { p.Abort(gone) }, ErrPeerGone},
		{"producer, cancel", "producer", 0, func(_, _ *Ring, cancel context.CancelFunc) { cancel() }, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testCtx(t, 10*time.Second))
			defer cancel()
			prod, cons := ringPair(t, 4096)
			errc := make(chan error, 1)
			var got []byte
			if tt.block == "consumer" {
				if err := prod.Write(ctx, pattern(tt.pending, 9)); err != nil {
					t.Fatal(err)
				}
				go func() {
					for {
						b, err := cons.Peek(ctx, 1<<20)
						if err != nil {
							errc <- err
							return
						}
						got = append(got, b...)
						cons.Release(len(b))
					}
				}()
			} else {
				go func() { errc <- prod.Write(ctx, make([]byte, 3*4096)) }()
			}
			time.Sleep(2 * WakePeriod) // let it fall asleep in the futex
			start := time.Now()
			tt.release(prod, cons, cancel)
			select {
			case err := <-errc:
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				// Close and Abort wake at once, a cancel within a
				// WakePeriod; a loaded machine adds scheduling delay.
				if el := time.Since(start); el > 2*WakePeriod+time.Second {
					t.Errorf("released after %v", el)
				}
				if tt.want == ErrPeerGone && !errors.Is(err, gone) {
					t.Errorf("err = %v does not wrap the cause", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("still blocked 5 s after the release")
			}
			if tt.block == "consumer" && tt.want != ErrClosed && len(got) != tt.pending {
				t.Errorf("consumer drained %d bytes, want %d", len(got), tt.pending)
			}
		})
	}
}

// TestRingWaitingIsCheap: a side blocked for a second must sleep in the
// kernel, not spin: it may use a few milliseconds of CPU, not a core.
func TestRingWaitingIsCheap(t *testing.T) {
	ctx, cancel := context.WithTimeout(testCtx(t, 10*time.Second), time.Second)
	defer cancel()
	_, cons := ringPair(t, 4096)
	cpu := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := cpu()
	_, err := cons.Peek(ctx, 1)
	used := cpu() - before
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	t.Logf("blocked 1 s, used %v of CPU", used)
	if used > 100*time.Millisecond {
		t.Errorf("blocked 1 s and used %v of CPU: the wait spins", used)
	}
}

// TestRingPingPong bounces a small message many times between two rings;
// with both sides going in and out of the futex, a lost wake-up would show
// as a stall (the test then fails on its context) or as a slow rate.
func TestRingPingPong(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)
	aProd, aCons := ringPair(t, 4096)
	bProd, bCons := ringPair(t, 4096)
	const rounds = 20000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m [64]byte
		for i := 0; i < rounds; i++ {
			if err := aCons.Read(ctx, m[:]); err != nil {
				t.Errorf("echo read %d: %v", i, err)
				return
			}
			if err := bProd.Write(ctx, m[:]); err != nil {
				t.Errorf("echo write %d: %v", i, err)
				return
			}
		}
	}()
	start := time.Now()
	var m [64]byte
	for i := 0; i < rounds; i++ {
		m[0] = byte(i)
		if err := aProd.Write(ctx, m[:]); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if err := bCons.Read(ctx, m[:]); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if m[0] != byte(i) {
			t.Fatalf("round %d got %d", i, m[0])
		}
	}
	wg.Wait()
	t.Logf("%d round trips in %v (%v each)", rounds, time.Since(start), time.Since(start)/rounds)
}

// TestWakeThreshold: a consumer asleep in PeekNeed is woken once the bytes
// it said it needs are there, not by every small commit before; a need
// that never comes costs at most about a WakePeriod.
func TestWakeThreshold(t *testing.T) {
	tests := []struct {
		name     string
		need     int
		trickle  int // 1 KiB commits, 1 ms apart
		wantMin  int // bytes PeekNeed must return at least
		maxDelay time.Duration
	}{
		// 8 commits take about 10 ms, well inside the WakePeriod after
		// which a sleeper takes what there is.
		{"need 8 KiB waits for 8 commits", 8 << 10, 32, 8 << 10, time.Second},
		{"need more than ever comes", 16 << 10, 2, 1024, 2*WakePeriod + 500*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testCtx(t, 10*time.Second)
			prod, cons := ringPair(t, 64<<10)
			// The trickle fits the ring, so it never blocks; wait for it
			// before the segment is unmapped.
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A waiter only holds out for its need once asleep (while
				// it spins, any progress ends its wait): on a loaded
				// machine the spin can outlast the first millisecond, so
				// the trickle starts once it sleeps.
				awaitSleep(cons)
				for i := 0; i < tt.trickle; i++ {
					time.Sleep(time.Millisecond)
					if err := prod.Write(ctx, make([]byte, 1024)); err != nil {
						return
					}
				}
			}()
			start := time.Now()
			b, err := cons.PeekNeed(ctx, tt.need, 64<<10)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) < tt.wantMin {
				t.Errorf("woke with %d bytes, want at least %d", len(b), tt.wantMin)
			}
			if el := time.Since(start); el > tt.maxDelay {
				t.Errorf("woke after %v", el)
			}
			t.Logf("woke after %v with %d bytes", time.Since(start), len(b))
		})
	}
}

// TestPlainPeekWakesAtFirstCommit: a consumer asleep in a plain Peek is
// woken by the first commit, whatever its size, and not left for the
// periodic wake. The producer commits once and then waits for the
// consumer, so how long a loaded machine takes to run the woken consumer
// changes nothing but the delay, and only a sleeper the commit did not
// wake sleeps on to the end of its WakePeriod.
func TestPlainPeekWakesAtFirstCommit(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	prod, cons := ringPair(t, 64<<10)
	committed := make(chan time.Time, 1)
	go func() {
		awaitSleep(cons)
		time.Sleep(time.Millisecond) // well into its futex sleep
		if err := prod.Write(ctx, make([]byte, 1024)); err == nil {
			committed <- time.Now()
		}
	}()
	b, err := cons.Peek(ctx, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	woke := time.Now()
	if len(b) != 1024 {
		t.Fatalf("woke with %d bytes, the producer committed 1024", len(b))
	}
	// Left for the periodic wake, it would wake 47-49 ms after the commit
	// (a WakePeriod after it fell asleep); woken by it, within the delay
	// of a loaded machine's scheduler (up to 8 ms seen in CI).
	if d := woke.Sub(<-committed); d > WakePeriod*4/5 {
		t.Errorf("woke %v after the commit: the commit did not wake it, the periodic wake did", d)
	}
}

// awaitSleep returns once the consumer of r announced a sleep in the
// futex (or after 5 s, when the caller's checks will tell what happened).
func awaitSleep(r *Ring) {
	for deadline := time.Now().Add(5 * time.Second); r.consWaiting.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
}

// TestRingUnread checks that Unread shows what is committed and unread
// without consuming it: all of it while contiguous, the run up to the end
// of the data area and the full count where it wraps.
func TestRingUnread(t *testing.T) {
	ctx := testCtx(t, 10*time.Second)
	const capacity = 4096
	prod, cons := ringPair(t, capacity)
	if run, total := cons.Unread(); len(run) != 0 || total != 0 {
		t.Fatalf("empty ring: Unread %d bytes of %d", len(run), total)
	}
	first := pattern(capacity-100, 1)
	if err := prod.Write(ctx, first); err != nil {
		t.Fatal(err)
	}
	if run, total := cons.Unread(); !bytes.Equal(run, first) || total != len(first) {
		t.Fatalf("contiguous: Unread %d bytes of %d, want all %d", len(run), total, len(first))
	}
	if err := cons.Read(ctx, make([]byte, len(first))); err != nil {
		t.Fatal(err)
	}
	wrapped := pattern(300, 2) // 100 bytes to the end of the data area, 200 from its start
	if err := prod.Write(ctx, wrapped); err != nil {
		t.Fatal(err)
	}
	run, total := cons.Unread()
	if !bytes.Equal(run, wrapped[:100]) || total != len(wrapped) {
		t.Fatalf("wrapped: Unread %d bytes of %d, want 100 of %d", len(run), total, len(wrapped))
	}
	got := make([]byte, len(wrapped))
	if err := cons.Read(ctx, got); err != nil || !bytes.Equal(got, wrapped) {
		t.Fatalf("reading after Unread: %v, same bytes %v", err, bytes.Equal(got, wrapped))
	}
}

package ratelog

import (
	"sync"
	"testing"
	"time"
)

// reports collects what a Limiter reports.
type reports struct {
	mu  sync.Mutex
	n   []int
	at  []time.Time
	got chan struct{} // one token per report
}

func newReports() *reports { return &reports{got: make(chan struct{}, 1000)} }

func (r *reports) report(n int, over time.Duration) {
	r.mu.Lock()
	r.n = append(r.n, n)
	r.at = append(r.at, time.Now())
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *reports) counts() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.n...)
}

func sum(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}

// wait waits for the next report, for at most d.
func (r *reports) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(d):
		t.Fatalf("no report within %v", d)
	}
}

// TestBurstThenCount: a flood gets burst events in full, the rest in one
// report at Close; nothing after Close.
func TestBurstThenCount(t *testing.T) {
	for _, tc := range []struct{ burst, events int }{{5, 1000}, {5, 5}, {5, 3}, {0, 10}, {1, 2}} {
		r := newReports()
		l := New(tc.burst, time.Hour, r.report)
		allowed := 0
		for range tc.events {
			if l.Allow() {
				allowed++
			}
		}
		l.Close()
		l.Close()
		if l.Allow() {
			t.Errorf("burst %d: allowed after Close", tc.burst)
		}
		got := r.counts()
		if want := min(tc.burst, tc.events); allowed != want {
			t.Errorf("burst %d, %d events: %d allowed, want %d", tc.burst, tc.events, allowed, want)
		}
		want := tc.events - allowed
		if (want == 0 && len(got) != 0) || (want > 0 && (len(got) != 1 || got[0] != want)) {
			t.Errorf("burst %d, %d events: reports %v, want one of %d (or none if 0)", tc.burst, tc.events, got, want)
		}
	}
}

// TestReportsAPeriodApart: a sustained flood from several goroutines gets
// its burst once and then a report at most once a period; the counts add
// up to every event.
func TestReportsAPeriodApart(t *testing.T) {
	const burst, every = 3, 40 * time.Millisecond
	r := newReports()
	l := New(burst, every, r.report)
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	events, allowed := 0, 0
	for range 4 {
		wg.Go(func() {
			for time.Since(start) < 10*every {
				ok := l.Allow()
				mu.Lock()
				events++
				if ok {
					allowed++
				}
				mu.Unlock()
				time.Sleep(50 * time.Microsecond)
			}
		})
	}
	wg.Wait()
	l.Close()
	elapsed := time.Since(start)
	got := r.counts()
	if allowed+sum(got) != events {
		t.Fatalf("%d allowed + %v reported != %d events", allowed, got, events)
	}
	// The goroutines never pause for a period unless the machine stalls
	// them; allow that, but not a burst per report.
	if allowed < burst || allowed > 2*burst {
		t.Errorf("%d allowed in one flood, want %d", allowed, burst)
	}
	if max := int(elapsed/every) + 1; len(got) > max {
		t.Errorf("%d reports in %v, want at most %d", len(got), elapsed, max)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 1; i < len(r.at)-1; i++ { // the last one may be Close's
		if gap := r.at[i].Sub(r.at[i-1]); gap < every {
			t.Errorf("reports %d and %d %v apart, want at least %v", i-1, i, gap, every)
		}
	}
}

// TestQuietStartsNewFlood: after a quiet period the next event is allowed
// again, and the timer reports without waiting for Close.
func TestQuietStartsNewFlood(t *testing.T) {
	const every = 30 * time.Millisecond
	r := newReports()
	l := New(2, every, r.report)
	defer l.Close()
	flood := func() (allowed int) {
		for range 5 {
			if l.Allow() {
				allowed++
			}
		}
		return allowed
	}
	if a := flood(); a != 2 {
		t.Fatalf("first flood: %d allowed, want 2", a)
	}
	r.wait(t, 5*time.Second)
	time.Sleep(2 * every)
	if a := flood(); a != 2 {
		t.Fatalf("second flood: %d allowed, want 2", a)
	}
	r.wait(t, 5*time.Second)
	if got := r.counts(); len(got) != 2 || got[0] != 3 || got[1] != 3 {
		t.Fatalf("reports %v, want [3 3]", got)
	}
}

// TestAllowDoesNotAllocate: the refused-connection path of a listener
// under a flood costs no garbage.
func TestAllowDoesNotAllocate(t *testing.T) {
	l := New(1, time.Hour, func(int, time.Duration) {})
	defer l.Close()
	if n := testing.AllocsPerRun(1000, func() { l.Allow() }); n != 0 {
		t.Fatalf("Allow allocates %v times per call", n)
	}
}

// Package ratelog bounds what a flood of like events writes to a log: the
// first few are logged in full by the caller, the others are only counted,
// and the count is reported at most once a period and once more when the
// owner closes. A listener that refuses connections is the case in point:
// a port scan or another user's flood must cost the job a handful of lines,
// not one per connection, while a lone misdirected peer is still logged
// with every detail.
package ratelog

import (
	"sync"
	"time"
)

// Limiter decides which events of one kind are logged in full. An event
// either is allowed (the caller logs it) or is counted (report tells of it
// later): none is lost and none is told twice. A flood ends when a whole
// period passes without an event; the next event then starts a new one
// with the full burst, so a stray event an hour after a flood still gets
// its details.
//
// Its methods are safe for concurrent use.
type Limiter struct {
	burst  int
	every  time.Duration
	report func(n int, over time.Duration)

	mu     sync.Mutex
	left   int       // events still to allow in this flood
	last   time.Time // of the latest event
	n      int       // events counted and not yet reported
	since  time.Time // when the first of them came
	timer  *time.Timer
	closed bool
}

// New returns a Limiter that allows the first burst events of a flood and
// counts the rest. report receives the count n and the time over which it
// gathered, at most once per every and from Close; it is called with the
// Limiter locked (so that a report and Close never cross), and must not
// call the Limiter.
func New(burst int, every time.Duration, report func(n int, over time.Duration)) *Limiter {
	return &Limiter{burst: burst, every: every, report: report, left: burst}
}

// Allow tells whether the caller should log this event in full; if not,
// the event is counted for the next report. It does not allocate, except
// once for the timer of the first report. After Close it returns false and
// counts nothing.
func (l *Limiter) Allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	// The clock is read under the lock, so that an event counted after a
	// report is never dated before it: reports stay a period apart.
	now := time.Now()
	if l.n == 0 && now.Sub(l.last) >= l.every {
		l.left = l.burst // quiet for a period: a new flood
	}
	l.last = now
	if l.left > 0 {
		l.left--
		return true
	}
	if l.n == 0 {
		l.since = now
		if l.timer == nil {
			l.timer = time.AfterFunc(l.every, l.flush)
		} else {
			l.timer.Reset(l.every)
		}
	}
	l.n++
	return false
}

// Close reports what is counted and not yet reported, if anything, and
// stops the timer: nothing is reported after Close returns.
func (l *Limiter) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.reportLocked()
}

func (l *Limiter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reportLocked()
}

func (l *Limiter) reportLocked() {
	if l.n == 0 {
		return // a timer that fired while Close took the count
	}
	n := l.n
	l.n = 0
	l.report(n, time.Since(l.since))
}

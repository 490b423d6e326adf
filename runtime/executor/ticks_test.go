package executor

import (
	"testing"
	"time"
)

// TestCalibrate: two calibrations 20 ms apart give a rate that places a
// reading of Now between two of TraceNow, taken between the
// calibrations, between the two's places within a microsecond.
func TestCalibrate(t *testing.T) {
	a := Calibrate()
	time.Sleep(10 * time.Millisecond)
	t0 := TraceNow()
	ns := Now()
	t1 := TraceNow()
	time.Sleep(10 * time.Millisecond)
	b := Calibrate()
	if b.Ticks <= a.Ticks || b.Ns <= a.Ns || a.ErrTicks < 0 || b.ErrTicks < 0 {
		t.Fatalf("calibrations %+v then %+v", a, b)
	}
	rate := float64(b.Ns-a.Ns) / float64(b.Ticks-a.Ticks)
	at := func(ticks int64) int64 { return a.Ns + int64(float64(ticks-a.Ticks)*rate) }
	if lo, hi := at(t0)-1000, at(t1)+1000; ns < lo || ns > hi {
		t.Errorf("Now read %d between ticks placed at %d and %d ns (rate %.4f ns/tick)", ns, at(t0), at(t1), rate)
	}
}

var sinkTicks int64

func BenchmarkTraceNow(b *testing.B) {
	for b.Loop() {
		sinkTicks += TraceNow()
	}
}

func BenchmarkNow(b *testing.B) {
	for b.Loop() {
		sinkTicks += Now()
	}
}

package executor

import (
	"testing"
	"time"
)

// TestCalibrate: two calibrations 20 ms apart give a rate that puts a
// reading of TraceNow taken between them within a microsecond of Now.
func TestCalibrate(t *testing.T) {
	a := Calibrate()
	time.Sleep(10 * time.Millisecond)
	ticks, ns := TraceNow(), Now()
	time.Sleep(10 * time.Millisecond)
	b := Calibrate()
	if b.Ticks <= a.Ticks || b.Ns <= a.Ns || a.ErrTicks < 0 {
		t.Fatalf("calibrations %+v then %+v", a, b)
	}
	rate := float64(b.Ns-a.Ns) / float64(b.Ticks-a.Ticks)
	got := a.Ns + int64(float64(ticks-a.Ticks)*rate)
	if d := got - ns; d < -1000 || d > 1000 {
		t.Errorf("ticks %d placed at %d ns, Now read %d: %d ns off (rate %.4f ns/tick)", ticks, got, ns, d, rate)
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

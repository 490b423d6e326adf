package executor

// The trace's times are read with TraceNow, which on amd64 with an
// invariant time-stamp counter is RDTSC: 12 ns a reading on the KVM guests
// here against 31 ns for Now (time.Since), and an 8-byte call traced
// reads the clock twice (docs/performance.md#tracing-overhead). The
// ticks become Now's nanoseconds when the trace is written, on the line
// through two Calibrations, one taken when tracing starts and one at the
// write (trace.Line): a time between the two is placed within the larger
// of their errors, plus what the monotonic clock was slewed by against
// the counter meanwhile (NTP's frequency corrections, parts per million
// of the time since the first). Elsewhere TraceNow is Now, a Calibration
// reads the same number twice, and the line is the identity.

// Calibration is a reading of both clocks at once: Ticks of TraceNow and
// Ns of Now, read within ErrTicks ticks of each other.
type Calibration struct {
	Ticks, Ns, ErrTicks int64
}

// Calibrate reads both clocks: the tightest of a few tries of Now between
// two readings of TraceNow.
func Calibrate() Calibration {
	if !tsc {
		n := Now()
		return Calibration{Ticks: n, Ns: n}
	}
	best := Calibration{ErrTicks: -1}
	for range 16 {
		t0 := TraceNow()
		ns := Now()
		t1 := TraceNow()
		if d := t1 - t0; d >= 0 && (best.ErrTicks < 0 || d < best.ErrTicks) {
			best = Calibration{Ticks: t0 + d/2, Ns: ns, ErrTicks: (d + 1) / 2}
		}
	}
	return best
}

package trace

import "math"

// Line turns a ring's times, read with the executor's TraceNow (the
// time-stamp counter's ticks on amd64, executor/ticks.go), into the
// nanoseconds since the file's Epoch the file holds: the line through two
// readings of both clocks, one when the ring was made and one when it is
// written. The zero Line is the identity, for times already in ns.
type Line struct {
	Ticks, Ns int64   // a point of the line
	NsPerTick float64 // 0: the identity
}

// LineThrough returns the line through (ticks0, ns0) and (ticks1, ns1),
// the identity when they tell no rate (the same point, or TraceNow is the
// ns clock itself).
func LineThrough(ticks0, ns0, ticks1, ns1 int64) Line {
	if ticks1 <= ticks0 || ns1 <= ns0 || ticks0 == ns0 && ticks1 == ns1 {
		return Line{}
	}
	return Line{Ticks: ticks0, Ns: ns0, NsPerTick: float64(ns1-ns0) / float64(ticks1-ticks0)}
}

// At returns the time of ticks, in ns.
func (l Line) At(ticks int64) int64 {
	if l.NsPerTick == 0 {
		return ticks
	}
	return l.Ns + int64(math.Round(float64(ticks-l.Ticks)*l.NsPerTick))
}

// Dur returns a span of ticks, in ns.
func (l Line) Dur(ticks int64) int64 {
	if l.NsPerTick == 0 {
		return ticks
	}
	return int64(math.Round(float64(ticks) * l.NsPerTick))
}

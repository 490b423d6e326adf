//go:build !noasm && gc

package executor

// rdtsc reads the time-stamp counter, without a fence (ticks_amd64.s).
func rdtsc() int64

// invariantTSC reports whether CPUID says the counter ticks at one rate
// whatever the core's frequency and sleep state (leaf 0x80000007, EDX
// bit 8: Linux's constant_tsc and nonstop_tsc).
func invariantTSC() bool

// tsc says whether TraceNow reads the counter.
var tsc = invariantTSC()

// TraceNow is the trace's clock (ticks.go): the time-stamp counter where
// it is invariant, else Now.
func TraceNow() int64 {
	if tsc {
		return rdtsc()
	}
	return Now()
}

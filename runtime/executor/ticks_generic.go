//go:build !amd64 || noasm || !gc

package executor

// tsc says whether TraceNow reads the time-stamp counter: not without
// assembly.
const tsc = false

// TraceNow is the trace's clock (ticks.go): without the time-stamp
// counter, Now itself.
func TraceNow() int64 { return Now() }

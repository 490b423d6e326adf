// Package cpu holds the few operations for which hcclrun goes below Go:
// a memory copy that picks REP MOVSB where it wins (Copy), a store with
// release semantics only (ReleaseStore64), and the spin-wait hint
// (Pause); and how a waiter lets the process's other goroutines run
// between its looks (YieldGoroutine), which a process of thread-locked
// callers turns off.
//
// Files follow one rule: X.go says what X does and holds the portable
// logic, X_amd64.go declares the assembly of X_amd64.s, and X_generic.go
// is the fallback for other architectures, other compilers and the noasm
// build tag (`go test -tags noasm` runs the generic code here).
package cpu

package reduce

import (
	"errors"
	"fmt"
)

// ErrUnsupported reports a (DType, Op) pair that has no kernel: an unknown
// value, or Avg on an integer type.
var ErrUnsupported = errors.New("reduce: unsupported")

// Kernel returns the function computing dst[i] = a[i] op b[i] over elements
// of d stored little-endian in byte slices of equal length (a multiple of
// d.Size()). dst may alias a or b exactly (same start); partial overlap gives
// unspecified results. Avg reduces as Sum (the caller divides at the end with
// Divide). It returns an error wrapping ErrUnsupported for Avg on integer
// types or unknown values.
//
// The returned function panics when the lengths differ or are not a
// multiple of d.Size(): that is a bug in the caller, and reading past a
// shorter slice is not an option for assembly. It allocates nothing and is
// safe for concurrent use on disjoint buffers. Kernel itself only indexes a
// table built at init, so callers may call it per collective.
func Kernel(d DType, op Op) (func(dst, a, b []byte), error) {
	if !d.Valid() || !op.Valid() {
		return nil, fmt.Errorf("%w: %v on %v", ErrUnsupported, op, d)
	}
	if op == Avg {
		if !d.IsFloat() {
			return nil, fmt.Errorf("%w: avg on integer type %v", ErrUnsupported, d)
		}
		op = Sum
	}
	return kernels[d][op], nil
}

// loop is a kernel body without argument checks: it may assume
// len(a) == len(b) == len(dst), a multiple of the element size.
type loop = func(dst, a, b []byte)

// genericLoops is the pure-Go implementation of every (DType, Op) pair
// (loops.go, loops_half.go). Each typed loop is named at its type here
// rather than in a generic helper: the function value generic code makes
// of sumTyped[T] ran float32 Min a quarter slower
// (docs/measurements.md#misaligned-buffers-go-through-aligned-copies).
var genericLoops = [numDTypes][numOps]loop{
	Int8:     row(sumTyped[int8], prodTyped[int8], maxTyped[int8], minTyped[int8], intCopies[int8]),
	Uint8:    row(sumTyped[uint8], prodTyped[uint8], maxTyped[uint8], minTyped[uint8], intCopies[uint8]),
	Int16:    row(sumTyped[int16], prodTyped[int16], maxTyped[int16], minTyped[int16], intCopies[int16]),
	Uint16:   row(sumTyped[uint16], prodTyped[uint16], maxTyped[uint16], minTyped[uint16], intCopies[uint16]),
	Int32:    row(sumTyped[int32], prodTyped[int32], maxTyped[int32], minTyped[int32], intCopies[int32]),
	Uint32:   row(sumTyped[uint32], prodTyped[uint32], maxTyped[uint32], minTyped[uint32], intCopies[uint32]),
	Int64:    row(sumTyped[int64], prodTyped[int64], maxTyped[int64], minTyped[int64], intCopies[int64]),
	Uint64:   row(sumTyped[uint64], prodTyped[uint64], maxTyped[uint64], minTyped[uint64], intCopies[uint64]),
	Float16:  {Sum: sumF16, Prod: prodF16, Max: maxF16, Min: minF16},
	BFloat16: {Sum: sumBF16, Prod: prodBF16, Max: maxBF16, Min: minBF16},
	Float32:  row(sumFloatTyped[float32], prodFloatTyped[float32], maxFloatTyped[float32], minFloatTyped[float32], floatCopies[float32]),
	Float64:  row(sumFloatTyped[float64], prodFloatTyped[float64], maxFloatTyped[float64], minFloatTyped[float64], floatCopies[float64]),
}

// isaLevel is an instruction-set level the kernels can be built for.
type isaLevel uint8

const (
	levelGeneric isaLevel = iota
	levelAVX2
	levelAVX512
)

func (l isaLevel) String() string {
	return [...]string{"generic", "avx2", "avx512"}[l]
}

// level is the instruction-set level the kernel table was built for: the
// best one the CPU supports (detectLevel, per architecture file). Tests
// lower it with useLevel to exercise every implementation on one machine.
var (
	detected = detectLevel()
	level    = detected
	kernels  = buildKernels(level)
	dividers = buildDividers(level)
)

// useLevel rebuilds the kernel tables for l and returns the previous level.
// Only tests call it, never concurrently with kernels in use.
func useLevel(l isaLevel) isaLevel {
	prev := level
	level, kernels, dividers, streamKernels = l, buildKernels(l), buildDividers(l), buildStreamKernels(l)
	return prev
}

// buildKernels makes the checked kernel of every valid (DType, Op) pair for
// level l: the architecture's loop where it has one, else the generic loop.
func buildKernels(l isaLevel) [numDTypes][numOps]loop {
	var t [numDTypes][numOps]loop
	for d := Int8; d <= Float64; d++ {
		for op := Sum; op <= Min; op++ {
			f := archLoop(l, d, op)
			if f == nil {
				f = genericLoops[d][op]
			}
			t[d][op] = checked(d, op, f)
		}
		t[d][Avg] = t[d][Sum]
	}
	return t
}

// checked wraps f with the length checks that make it memory safe.
func checked(d DType, op Op, f loop) loop {
	size := d.Size()
	return func(dst, a, b []byte) {
		if len(a) != len(dst) || len(b) != len(dst) || len(dst)%size != 0 {
			panic(fmt.Sprintf("reduce: %v %v kernel: lengths dst=%d a=%d b=%d are not equal multiples of %d",
				d, op, len(dst), len(a), len(b), size))
		}
		f(dst, a, b)
	}
}

// Implementation names the kernel implementation in use: "avx512", "avx2"
// or "generic".
func Implementation() string { return level.String() }

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

// genericLoops is the pure-Go implementation of every (DType, Op) pair:
// the typed loop where the buffers allow it, else the byte loop. Sum and
// Prod are the same bits for signed and unsigned integers.
var genericLoops = [numDTypes][numOps]loop{
	Int8: {Sum: typed(sumTyped[uint8], sum8), Prod: typed(prodTyped[uint8], prod8),
		Max: typed(maxTyped[int8], max8[int8]), Min: typed(minTyped[int8], min8[int8])},
	Uint8: {Sum: typed(sumTyped[uint8], sum8), Prod: typed(prodTyped[uint8], prod8),
		Max: typed(maxTyped[uint8], max8[uint8]), Min: typed(minTyped[uint8], min8[uint8])},
	Int16: {Sum: typed(sumTyped[uint16], sum16), Prod: typed(prodTyped[uint16], prod16),
		Max: typed(maxTyped[int16], max16[int16]), Min: typed(minTyped[int16], min16[int16])},
	Uint16: {Sum: typed(sumTyped[uint16], sum16), Prod: typed(prodTyped[uint16], prod16),
		Max: typed(maxTyped[uint16], max16[uint16]), Min: typed(minTyped[uint16], min16[uint16])},
	Int32: {Sum: typed(sumTyped[uint32], sum32), Prod: typed(prodTyped[uint32], prod32),
		Max: typed(maxTyped[int32], max32[int32]), Min: typed(minTyped[int32], min32[int32])},
	Uint32: {Sum: typed(sumTyped[uint32], sum32), Prod: typed(prodTyped[uint32], prod32),
		Max: typed(maxTyped[uint32], max32[uint32]), Min: typed(minTyped[uint32], min32[uint32])},
	Int64: {Sum: typed(sumTyped[uint64], sum64), Prod: typed(prodTyped[uint64], prod64),
		Max: typed(maxTyped[int64], max64[int64]), Min: typed(minTyped[int64], min64[int64])},
	Uint64: {Sum: typed(sumTyped[uint64], sum64), Prod: typed(prodTyped[uint64], prod64),
		Max: typed(maxTyped[uint64], max64[uint64]), Min: typed(minTyped[uint64], min64[uint64])},
	Float16:  {Sum: sumF16, Prod: prodF16, Max: maxF16, Min: minF16},
	BFloat16: {Sum: sumBF16, Prod: prodBF16, Max: maxBF16, Min: minBF16},
	Float32: {Sum: typed(sumFloatTyped[float32], sumF32), Prod: typed(prodFloatTyped[float32], prodF32),
		Max: typed(maxFloatTyped[float32], maxF32), Min: typed(minFloatTyped[float32], minF32)},
	Float64: {Sum: typed(sumFloatTyped[float64], sumF64), Prod: typed(prodFloatTyped[float64], prodF64),
		Max: typed(maxFloatTyped[float64], maxF64), Min: typed(minFloatTyped[float64], minF64)},
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

// Implementation names the kernel implementation in use ("avx512", "avx2"
// or "generic"), for the runtime's INFO log line.
func Implementation() string { return level.String() }

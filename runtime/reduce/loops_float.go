package reduce

import "math"

// Generic float32 and float64 loops, and the Max/Min rule every kernel
// (generic and assembly) implements bit for bit:
//
//   - NaN propagates: if a is NaN the result is a (its exact bits); else if b
//     is NaN the result is b. This is the IEEE 754-2019 maximum/minimum (and
//     Go's builtin max/min) choice rather than C's fmax, which drops NaNs:
//     a NaN anywhere in a reduction should be visible in the result.
//   - -0 is less than +0: Max(-0, +0) = +0 and Min(-0, +0) = -0 whatever
//     the order. Equal operands otherwise have equal bits, so the result of
//     equal operands is a AND b for Max and a OR b for Min; the assembly
//     uses the same trick.
//
// Sum and Prod are the IEEE operations with the NaN a result carries pinned
// down the way x86 does it: a NaN in a wins (quieted), else a NaN in b, else
// an invalid operation (Inf - Inf, 0 * Inf) gives the hardware's default NaN.
// IEEE 754 leaves the choice between two NaN operands open and the Go
// compiler is free to swap the operands of a commutative +, so the generic
// loops return a+a when a is NaN: that one compare per element keeps the
// generic code and the assembly (whose first source operand is a) equal bit
// for bit.

func addF32(x, y float32) float32 {
	if x != x {
		return x + x
	}
	return x + y
}

func mulF32(x, y float32) float32 {
	if x != x {
		return x + x
	}
	return x * y
}

func addF64(x, y float64) float64 {
	if x != x {
		return x + x
	}
	return x + y
}

func mulF64(x, y float64) float64 {
	if x != x {
		return x + x
	}
	return x * y
}

func fmax32(x, y float32) float32 {
	switch {
	case x != x:
		return x
	case y != y:
		return y
	case x > y:
		return x
	case x < y:
		return y
	}
	return math.Float32frombits(math.Float32bits(x) & math.Float32bits(y))
}

func fmin32(x, y float32) float32 {
	switch {
	case x != x:
		return x
	case y != y:
		return y
	case x < y:
		return x
	case x > y:
		return y
	}
	return math.Float32frombits(math.Float32bits(x) | math.Float32bits(y))
}

func fmax64(x, y float64) float64 {
	switch {
	case x != x:
		return x
	case y != y:
		return y
	case x > y:
		return x
	case x < y:
		return y
	}
	return math.Float64frombits(math.Float64bits(x) & math.Float64bits(y))
}

func fmin64(x, y float64) float64 {
	switch {
	case x != x:
		return x
	case y != y:
		return y
	case x < y:
		return x
	case x > y:
		return y
	}
	return math.Float64frombits(math.Float64bits(x) | math.Float64bits(y))
}

func ldf32(p []byte) float32    { return math.Float32frombits(ld32(p)) }
func stf32(p []byte, v float32) { st32(p, math.Float32bits(v)) }
func ldf64(p []byte) float64    { return math.Float64frombits(ld64(p)) }
func stf64(p []byte, v float64) { st64(p, math.Float64bits(v)) }

func sumF32(dst, a, b []byte) {
	for len(dst) >= 4 && len(a) >= 4 && len(b) >= 4 {
		stf32(dst, addF32(ldf32(a), ldf32(b)))
		dst, a, b = dst[4:], a[4:], b[4:]
	}
}

func prodF32(dst, a, b []byte) {
	for len(dst) >= 4 && len(a) >= 4 && len(b) >= 4 {
		stf32(dst, mulF32(ldf32(a), ldf32(b)))
		dst, a, b = dst[4:], a[4:], b[4:]
	}
}

func maxF32(dst, a, b []byte) {
	for len(dst) >= 4 && len(a) >= 4 && len(b) >= 4 {
		stf32(dst, fmax32(ldf32(a), ldf32(b)))
		dst, a, b = dst[4:], a[4:], b[4:]
	}
}

func minF32(dst, a, b []byte) {
	for len(dst) >= 4 && len(a) >= 4 && len(b) >= 4 {
		stf32(dst, fmin32(ldf32(a), ldf32(b)))
		dst, a, b = dst[4:], a[4:], b[4:]
	}
}

func sumF64(dst, a, b []byte) {
	for len(dst) >= 8 && len(a) >= 8 && len(b) >= 8 {
		stf64(dst, addF64(ldf64(a), ldf64(b)))
		dst, a, b = dst[8:], a[8:], b[8:]
	}
}

func prodF64(dst, a, b []byte) {
	for len(dst) >= 8 && len(a) >= 8 && len(b) >= 8 {
		stf64(dst, mulF64(ldf64(a), ldf64(b)))
		dst, a, b = dst[8:], a[8:], b[8:]
	}
}

func maxF64(dst, a, b []byte) {
	for len(dst) >= 8 && len(a) >= 8 && len(b) >= 8 {
		stf64(dst, fmax64(ldf64(a), ldf64(b)))
		dst, a, b = dst[8:], a[8:], b[8:]
	}
}

func minF64(dst, a, b []byte) {
	for len(dst) >= 8 && len(a) >= 8 && len(b) >= 8 {
		stf64(dst, fmin64(ldf64(a), ldf64(b)))
		dst, a, b = dst[8:], a[8:], b[8:]
	}
}

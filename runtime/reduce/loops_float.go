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

func ldf32(p []byte, i int) float32    { return math.Float32frombits(ld32(p, i)) }
func stf32(p []byte, i int, v float32) { st32(p, i, math.Float32bits(v)) }
func ldf64(p []byte, i int) float64    { return math.Float64frombits(ld64(p, i)) }
func stf64(p []byte, i int, v float64) { st64(p, i, math.Float64bits(v)) }

func sumF32(dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		stf32(dst, i, addF32(ldf32(a, i), ldf32(b, i)))
	}
}

func prodF32(dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		stf32(dst, i, mulF32(ldf32(a, i), ldf32(b, i)))
	}
}

func maxF32(dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		stf32(dst, i, fmax32(ldf32(a, i), ldf32(b, i)))
	}
}

func minF32(dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		stf32(dst, i, fmin32(ldf32(a, i), ldf32(b, i)))
	}
}

func sumF64(dst, a, b []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		stf64(dst, i, addF64(ldf64(a, i), ldf64(b, i)))
	}
}

func prodF64(dst, a, b []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		stf64(dst, i, mulF64(ldf64(a, i), ldf64(b, i)))
	}
}

func maxF64(dst, a, b []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		stf64(dst, i, fmax64(ldf64(a, i), ldf64(b, i)))
	}
}

func minF64(dst, a, b []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		stf64(dst, i, fmin64(ldf64(a, i), ldf64(b, i)))
	}
}

package reduce

import "math"

// The float operations, and the rule every kernel (generic and assembly)
// implements bit for bit:
//
//   - Max and Min: NaN propagates: if a is NaN the result is a (its exact
//     bits); else if b is NaN the result is b. This is the IEEE 754-2019
//     maximum/minimum (and Go's builtin max/min) choice rather than C's
//     fmax, which drops NaNs: a NaN anywhere in a reduction should be
//     visible in the result. -0 is less than +0: Max(-0, +0) = +0 and
//     Min(-0, +0) = -0 whatever the order. The assembly takes the AND of
//     equal operands' bits for Max and the OR for Min; the Go code picks by
//     sign, which gives the same bits (equal non-zero operands have equal
//     bits).
//   - Sum and Prod are the IEEE operations with the NaN a result carries
//     pinned down the way x86 does it: a NaN in a wins (quieted), else a NaN
//     in b, else an invalid operation (Inf - Inf, 0 * Inf) gives the
//     hardware's default NaN. IEEE 754 leaves the choice between two NaN
//     operands open and the Go compiler is free to swap the operands of a
//     commutative +, so the Go code returns a+a when a is NaN: that one
//     compare per element keeps it and the assembly (whose first source
//     operand is a) equal bit for bit.
//
// The 16-bit float loops compute through these four; the typed float
// loops (loops_typed.go) spell out the same choices.

func addFloat[T float](x, y T) T {
	if x != x {
		y = x
	}
	return x + y
}

func mulFloat[T float](x, y T) T {
	if x != x {
		return x + x
	}
	return x * y
}

func maxFloat[T float](x, y T) T {
	switch {
	case x != x:
	case y != y, x < y:
		x = y
	case x == y && math.Signbit(float64(x)):
		x = y // -0 and ±0: y is +0 unless both are -0
	}
	return x
}

func minFloat[T float](x, y T) T {
	switch {
	case x != x:
	case y != y, x > y:
		x = y
	case x == y && !math.Signbit(float64(x)):
		x = y // +0 and ±0: y is -0 unless both are +0
	}
	return x
}

package reduce

import "math"

// Typed loops: the same operations as loops_int.go and loops_float.go over
// []T views of the buffers (see asTyped), used by the generic kernels when
// the host is little-endian and all three slices are aligned for T. They
// let the compiler emit one load and one store per element instead of
// decoding bytes, which makes the fallback several times faster off amd64.
// They must produce the same bits as the byte loops; the tests run both
// (aligned and misaligned offsets) against each other and the reference.

type word interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

type ordered interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

type float interface{ ~float32 | ~float64 }

func sumTyped[T word | float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func prodTyped[T word](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func maxTyped[T ordered](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = max(a[i], b[i])
	}
}

func minTyped[T ordered](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = min(a[i], b[i])
	}
}

// The float loops pin the NaN choices as fmax32 and addF32 do (see
// loops_float.go). For equal operands they pick by sign instead of the
// AND/OR on bits, which gives the same result: equal non-zero operands
// have equal bits, and of two zeros Max keeps +0 and Min keeps -0.

func sumFloatTyped[T float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		x, y := a[i], b[i]
		if x != x {
			y = x
		}
		dst[i] = x + y
	}
}

func prodFloatTyped[T float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		x, y := a[i], b[i]
		if x != x {
			dst[i] = x + x
			continue
		}
		dst[i] = x * y
	}
}

func maxFloatTyped[T float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		x, y := a[i], b[i]
		switch {
		case x != x:
		case y != y, x < y:
			x = y
		case x == y && math.Signbit(float64(x)):
			x = y // -0 and ±0: y is +0 unless both are -0
		}
		dst[i] = x
	}
}

func minFloatTyped[T float](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		x, y := a[i], b[i]
		switch {
		case x != x:
		case y != y, x > y:
			x = y
		case x == y && !math.Signbit(float64(x)):
			x = y // +0 and ±0: y is -0 unless both are +0
		}
		dst[i] = x
	}
}

// typed returns the kernel body that runs fast over []T views when all
// three slices allow one and falls back to the byte loop otherwise.
func typed[T any](fast func(dst, a, b []T), slow loop) loop {
	return func(dst, a, b []byte) {
		if td, ok := asTyped[T](dst); ok {
			if ta, ok := asTyped[T](a); ok {
				if tb, ok := asTyped[T](b); ok {
					fast(td, ta, tb)
					return
				}
			}
		}
		slow(dst, a, b)
	}
}

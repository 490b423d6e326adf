package reduce

import "math"

// Typed loops: each operation once, over []T: views of the buffers where
// they allow one (typed), else aligned copies (loops.go). One loop per
// operator, so that the compiler emits one load and one store per element
// and no branch on the operator.

type ordered interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

type float interface{ ~float32 | ~float64 }

// sumTyped and prodTyped wrap for integers, the same bits for signed and
// unsigned types.
func sumTyped[T ordered](dst, a, b []T) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func prodTyped[T ordered](dst, a, b []T) {
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

// The float loops implement the rule of float.go, written out rather than
// calling addFloat and the rest: through the calls float32 Prod and Min
// ran a quarter slower (docs/measurements.md#misaligned-buffers-go-through-aligned-copies).
// For equal operands Max and Min pick by sign.

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
// three slices allow one (asTyped) and slow otherwise.
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

package bench

import (
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// pattern is the benchmark's input data and the exact result it must give.
// Every input is a small non-negative integer that depends on the rank and
// the element's index, chosen so that the reduction over any number of
// ranks stays at or below the type's Exact bound: integers then never wrap
// and floating-point sums are exact whatever order the algorithm adds in,
// so the check can demand bit equality. Results are at least 1, so the
// sentinel 0 that fills output buffers before the checked run tells an
// element that was never written from a right one.
//
//	sum, max, min, data movement  v(r,i) = (7r + i) mod m + 1    m = min(100, Exact/n)
//	prod                          v(r,i) = 2 if (r+i) mod n == 0, else 1   (product 2)
//	avg                           v(r,i) = b(i) + d(r), b(i) = i mod m' + 1, with
//	                              d = +1,-1 on pairs of ranks (0 for an odd last one),
//	                              so the sum is n*b(i) and the average b(i)
type pattern struct {
	n  int    // ranks
	op string // the reduction's name; "sum" for collectives that do not reduce
	m  int64  // modulus of the sum/max/min pattern
	ma int64  // modulus of the avg pattern
}

func newPattern(d DType, n int, op string) pattern {
	p := pattern{n: n, op: op}
	p.m = min(100, max(1, d.Exact/int64(n)))
	p.ma = min(100, max(1, d.Exact/int64(n)-2))
	return p
}

// value is rank r's input element i.
func (p pattern) value(r, i int) int64 {
	switch p.op {
	case "prod":
		if (r+i)%p.n == 0 {
			return 2
		}
		return 1
	case "avg":
		b := int64(i)%p.ma + 1
		switch {
		case r%2 == 1:
			return b - 1
		case r+1 < p.n:
			return b + 1
		}
		return b
	}
	return (7*int64(r)+int64(i))%p.m + 1
}

// reduced is element i of the reduction over every rank's input.
func (p pattern) reduced(i int) int64 {
	switch p.op {
	case "prod":
		return 2
	case "avg":
		return int64(i)%p.ma + 1
	}
	acc := p.value(0, i)
	for r := 1; r < p.n; r++ {
		v := p.value(r, i)
		switch p.op {
		case "max":
			acc = max(acc, v)
		case "min":
			acc = min(acc, v)
		default:
			acc += v
		}
	}
	return acc
}

// converter returns the exact conversion of a small integer to T, chosen
// once per type so that fill and check loops do not switch per element.
func converter[T hccl.Element]() func(int64) T {
	var zero T
	switch any(zero).(type) {
	case hccl.Float16:
		return func(v int64) T { return T(hccl.Float16From(float32(v))) }
	case hccl.BFloat16:
		return func(v int64) T { return T(hccl.BFloat16From(float32(v))) }
	}
	return func(v int64) T { return T(v) }
}

// fillWith sets buf[i] = conv(f(i)).
func fillWith[T hccl.Element](buf []T, conv func(int64) T, f func(i int) int64) {
	for i := range buf {
		buf[i] = conv(f(i))
	}
}

// countWrong is the number of elements of got that differ from conv(want(i)).
// Floating values compare by value (no NaN can be right).
func countWrong[T hccl.Element](got []T, conv func(int64) T, want func(i int) int64) int64 {
	var wrong int64
	for i, g := range got {
		if g != conv(want(i)) {
			wrong++
		}
	}
	return wrong
}

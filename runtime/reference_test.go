package runtime_test

import (
	"bytes"
	"fmt"
	"math"
	"unsafe"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// The naive reference the collectives are checked against: element by
// element, in rank order, on integer-valued data whose float sums and
// products are exact, so any correct algorithm gives the same bits.

// fromInt converts an integer test value to T.
func fromInt[T hccl.Element](v int64) T {
	var zero T
	switch any(zero).(type) {
	case hccl.Float16:
		return any(hccl.Float16From(float32(v))).(T)
	case hccl.BFloat16:
		return any(hccl.BFloat16From(float32(v))).(T)
	case float32:
		return any(float32(v)).(T)
	case float64:
		return any(float64(v)).(T)
	case int8:
		return any(int8(v)).(T)
	case uint8:
		return any(uint8(v)).(T)
	case int16:
		return any(int16(v)).(T)
	case uint16:
		return any(uint16(v)).(T)
	case int32:
		return any(int32(v)).(T)
	case uint32:
		return any(uint32(v)).(T)
	case int64:
		return any(v).(T)
	case uint64:
		return any(uint64(v)).(T)
	}
	panic("unreachable")
}

func isFloat[T hccl.Element]() bool {
	var zero T
	switch any(zero).(type) {
	case hccl.Float16, hccl.BFloat16, float32, float64:
		return true
	}
	return false
}

func isSigned[T hccl.Element]() bool {
	var zero T
	switch any(zero).(type) {
	case uint8, uint16, uint32, uint64:
		return false
	}
	return true
}

// value is rank r's element i of a test buffer for op: small integers so
// that Sum over 8 ranks fits int8 and float16 exactly; for Prod, ones and
// twos (and minus ones for signed types) so that products stay exact.
func value[T hccl.Element](op hccl.ReduceOp, r, i int) T {
	h := int64((i*7 + r*13 + i/3) % 11)
	if op == hccl.Prod {
		v := 1 + h%2
		if isSigned[T]() && h == 5 {
			v = -1
		}
		return fromInt[T](v)
	}
	if isSigned[T]() {
		h -= 5
	}
	return fromInt[T](h)
}

// combine is the reference a op b.
func combine[T hccl.Element](op hccl.ReduceOp, a, b T) T {
	switch x := any(a).(type) {
	case hccl.Float16:
		y := any(b).(hccl.Float16)
		return any(hccl.Float16From(float32(combineFloat(op, float64(x.Float32()), float64(y.Float32()))))).(T)
	case hccl.BFloat16:
		y := any(b).(hccl.BFloat16)
		return any(hccl.BFloat16From(float32(combineFloat(op, float64(x.Float32()), float64(y.Float32()))))).(T)
	case float32:
		return any(float32(combineFloat(op, float64(x), float64(any(b).(float32))))).(T)
	case float64:
		return any(combineFloat(op, x, any(b).(float64))).(T)
	case int8:
		return any(combineInt(op, x, any(b).(int8))).(T)
	case uint8:
		return any(combineInt(op, x, any(b).(uint8))).(T)
	case int16:
		return any(combineInt(op, x, any(b).(int16))).(T)
	case uint16:
		return any(combineInt(op, x, any(b).(uint16))).(T)
	case int32:
		return any(combineInt(op, x, any(b).(int32))).(T)
	case uint32:
		return any(combineInt(op, x, any(b).(uint32))).(T)
	case int64:
		return any(combineInt(op, x, any(b).(int64))).(T)
	case uint64:
		return any(combineInt(op, x, any(b).(uint64))).(T)
	}
	panic("unreachable")
}

func combineFloat(op hccl.ReduceOp, a, b float64) float64 {
	switch op {
	case hccl.Sum, hccl.Avg:
		return a + b
	case hccl.Prod:
		return a * b
	case hccl.Max:
		return math.Max(a, b)
	case hccl.Min:
		return math.Min(a, b)
	}
	panic("bad op")
}

type integer interface {
	int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64
}

func combineInt[I integer](op hccl.ReduceOp, a, b I) I {
	switch op {
	case hccl.Sum:
		return a + b
	case hccl.Prod:
		return a * b
	case hccl.Max:
		return max(a, b)
	case hccl.Min:
		return min(a, b)
	}
	panic("bad op")
}

// average finishes Avg as the runtime documents: the sum divided by n in
// float32 for 16- and 32-bit floats, in float64 for float64.
func average[T hccl.Element](sum T, n int) T {
	switch x := any(sum).(type) {
	case hccl.Float16:
		return any(hccl.Float16From(x.Float32() / float32(n))).(T)
	case hccl.BFloat16:
		return any(hccl.BFloat16From(x.Float32() / float32(n))).(T)
	case float32:
		return any(x / float32(n)).(T)
	case float64:
		return any(x / float64(n)).(T)
	}
	panic("Avg on an integer type")
}

// reduced is the reference reduction over n ranks of element i of buffers
// made by value.
func reduced[T hccl.Element](op hccl.ReduceOp, n, i int) T {
	acc := value[T](op, 0, i)
	for r := 1; r < n; r++ {
		acc = combine(op, acc, value[T](op, r, i))
	}
	if op == hccl.Avg {
		acc = average(acc, n)
	}
	return acc
}

// sameBits compares two buffers bit for bit and describes the first
// difference.
func sameBits[T hccl.Element](got, want []T) error {
	if len(got) != len(want) {
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	}
	if len(got) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(got[0]))
	g := unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), len(got)*size)
	w := unsafe.Slice((*byte)(unsafe.Pointer(&want[0])), len(want)*size)
	if bytes.Equal(g, w) {
		return nil
	}
	for i := range got {
		if !bytes.Equal(g[i*size:(i+1)*size], w[i*size:(i+1)*size]) {
			return fmt.Errorf("element %d of %d is %v, want %v", i, len(got), got[i], want[i])
		}
	}
	return nil
}

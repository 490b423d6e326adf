package reduce

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
)

// This file holds the test oracle: random operands rich in special values,
// and a naive per-element reference written from the definitions
// (independently of the loops under test where that is possible).

var allDTypes = []DType{Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Uint64, Float16, BFloat16, Float32, Float64}

var allOps = []Op{Sum, Prod, Max, Min, Avg}

// availableLevels lists the implementations this machine can run.
func availableLevels() []isaLevel {
	var ls []isaLevel
	for l := levelGeneric; l <= detected; l++ {
		ls = append(ls, l)
	}
	return ls
}

func getElem(p []byte, i, size int) uint64 {
	switch size {
	case 1:
		return uint64(p[i])
	case 2:
		return uint64(binary.LittleEndian.Uint16(p[i*2:]))
	case 4:
		return uint64(binary.LittleEndian.Uint32(p[i*4:]))
	}
	return binary.LittleEndian.Uint64(p[i*8:])
}

func putElem(p []byte, i, size int, v uint64) {
	switch size {
	case 1:
		p[i] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(p[i*2:], uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(p[i*4:], uint32(v))
	default:
		binary.LittleEndian.PutUint64(p[i*8:], v)
	}
}

// specials are bit patterns every float test should meet: zeros of both
// signs, infinities, quiet and signalling NaNs of both signs with payloads,
// the smallest and largest subnormals and normals.
func specials(d DType) []uint64 {
	switch d {
	case Float16:
		return []uint64{0, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0xfd55, 0x7e3f,
			1, 0x8001, 0x3ff, 0x400, 0x7bff, 0xfbff, 0x3c00, 0xbc00}
	case BFloat16:
		return []uint64{0, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xffd5, 0x7fbf,
			1, 0x8001, 0x7f, 0x80, 0x7f7f, 0xff7f, 0x3f80, 0xbf80}
	case Float32:
		return []uint64{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
			0x7f800001, 0xff812345, 0x7fc12345, 1, 0x80000001, 0x7fffff, 0x800000,
			0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000}
	case Float64:
		return []uint64{0, 1 << 63, 0x7ff0000000000000, 0xfff0000000000000,
			0x7ff8000000000000, 0xfff8000000000000, 0x7ff0000000000001, 0xfff0000012345678,
			0x7ff8000012345678, 1, 1<<63 | 1, 0xfffffffffffff, 0x10000000000000,
			0x7fefffffffffffff, 0xffefffffffffffff, 0x3ff0000000000000, 0xbff0000000000000}
	}
	s := uint(d.Size() * 8)
	top := uint64(1) << (s - 1)
	return []uint64{0, 1, top - 1, top, top + 1, 1<<s - 1, 2, 3}
}

// randomOperands fills a and b with operand pairs: random bits, ordinary
// values, special values, and equal or negated pairs (for the Max/Min tie
// rules and for Inf - Inf).
func randomOperands(rng *rand.Rand, d DType, a, b []byte) {
	size := d.Size()
	mask := uint64(1)<<(uint(size)*8) - 1
	if size == 8 {
		mask = math.MaxUint64
	}
	sp := specials(d)
	signBit := uint64(1) << (uint(size)*8 - 1)
	value := func() uint64 {
		switch r := rng.IntN(10); {
		case r < 3:
			return rng.Uint64() & mask
		case r < 5:
			return sp[rng.IntN(len(sp))]
		default:
			// An ordinary value: a small integer scaled by a power of two.
			v := float64(rng.IntN(2001)-1000) * math.Ldexp(1, rng.IntN(21)-10)
			switch d {
			case Float16:
				return uint64(Float16FromFloat32(float32(v)))
			case BFloat16:
				return uint64(BFloat16FromFloat32(float32(v)))
			case Float32:
				return uint64(math.Float32bits(float32(v)))
			case Float64:
				return math.Float64bits(v)
			}
			return uint64(int64(rng.IntN(2001)-1000)) & mask
		}
	}
	for i := range len(a) / size {
		x := value()
		var y uint64
		switch r := rng.IntN(10); {
		case r == 0:
			y = x
		case r == 1 && d.IsFloat():
			y = x ^ signBit
		default:
			y = value()
		}
		putElem(a, i, size, x)
		putElem(b, i, size, y)
	}
}

// isNaN reports whether the element bits v of d are a NaN.
func isNaN(d DType, v uint64) bool {
	switch d {
	case Float16:
		return v&0x7c00 == 0x7c00 && v&0x3ff != 0
	case BFloat16:
		return v&0x7f80 == 0x7f80 && v&0x7f != 0
	case Float32:
		return v&0x7f800000 == 0x7f800000 && v&0x7fffff != 0
	case Float64:
		return math.IsNaN(math.Float64frombits(v))
	}
	return false
}

var halfMags = func() []float64 {
	m := make([]float64, 0x7c01)
	for h := range 0x7c00 {
		m[h] = half16Value(uint16(h))
	}
	m[0x7c00] = 65536
	return m
}()

// nearestBF16 rounds float32 bits to bfloat16 by comparing distances in
// float64: the reference for BFloat16FromFloat32.
func nearestBF16(bits uint32) uint16 {
	f := math.Float32frombits(bits)
	if math.IsNaN(float64(f)) {
		return uint16(bits>>16) | 0x40
	}
	lo := uint16(bits >> 16)
	if math.IsInf(float64(f), 0) {
		return lo
	}
	hi := lo + 1 // next magnitude, same sign (0x7f80 is Inf)
	x := math.Abs(float64(f))
	dl := x - math.Abs(float64(BFloat16ToFloat32(lo)))
	dh := math.Abs(float64(BFloat16ToFloat32(hi))) - x
	if lo&0x7fff == 0x7f7f { // hi is Inf: the distance is to 2^128
		dh = math.Ldexp(1, 128) - x
	}
	if dl < dh || dl == dh && lo&1 == 0 {
		return lo
	}
	return hi
}

// floatValue decodes float element bits to float64 (exactly).
func floatValue(d DType, v uint64) float64 {
	switch d {
	case Float16:
		return half16Value(uint16(v))
	case BFloat16:
		return float64(math.Float32frombits(uint32(v) << 16))
	case Float32:
		return float64(math.Float32frombits(uint32(v)))
	}
	return math.Float64frombits(v)
}

// roundTo rounds an exact-or-float64 result to d. For Float32 and the
// 16-bit types the float64 value is first rounded to float32, which is
// what "computed in float32" means: the float64 result of one +, * of two
// float32 values rounds to the same float32 as the float32 operation
// (float64 has more than 2*24+2 bits).
func roundTo(d DType, x float64) uint64 {
	f := float32(x)
	switch d {
	case Float16:
		return uint64(nearestHalf(halfMags, f))
	case BFloat16:
		return uint64(nearestBF16(math.Float32bits(f)))
	case Float32:
		return uint64(math.Float32bits(f))
	}
	return math.Float64bits(x)
}

// quiet returns the NaN bits v as the 16-bit narrowing leaves them.
func quiet(d DType, v uint64) uint64 {
	switch d {
	case Float16:
		return v | 0x200
	case BFloat16:
		return v | 0x40
	}
	return v
}

// refOp is the naive reference for one element. For float Sum and Prod
// with a NaN result it returns a NaN the caller compares only as "a NaN"
// (see sameElem): IEEE 754 does not say which NaN.
func refOp(d DType, op Op, x, y uint64) uint64 {
	if op == Avg {
		op = Sum
	}
	size := uint(d.Size() * 8)
	mask := uint64(1)<<size - 1
	if size == 64 {
		mask = math.MaxUint64
	}
	if !d.IsFloat() {
		signed := d == Int8 || d == Int16 || d == Int32 || d == Int64
		sx := int64(x<<(64-size)) >> (64 - size)
		sy := int64(y<<(64-size)) >> (64 - size)
		less := x < y // y is larger
		if signed {
			less = sx < sy
		}
		switch op {
		case Sum:
			return (x + y) & mask
		case Prod:
			return (x * y) & mask
		case Max:
			if less {
				return y
			}
			return x
		default:
			if less {
				return x
			}
			return y
		}
	}
	a, b := floatValue(d, x), floatValue(d, y)
	switch op {
	case Sum:
		return roundTo(d, a+b)
	case Prod:
		return roundTo(d, a*b)
	}
	switch {
	case math.IsNaN(a):
		return quiet(d, x)
	case math.IsNaN(b):
		return quiet(d, y)
	case a == b && a == 0:
		neg := math.Signbit(a) || math.Signbit(b) // Min: -0 if either is -0
		if op == Max {
			neg = math.Signbit(a) && math.Signbit(b)
		}
		if neg {
			return 1 << (size - 1)
		}
		return 0
	case a > b == (op == Max):
		return x
	case a == b:
		return x
	}
	return y
}

// sameElem reports whether got is an acceptable result given the expected
// want: identical bits, except that when want comes from the naive
// reference (reference is true) a NaN result of a float Sum or Prod only
// has to be a NaN: the reference computes in float64 and does not model
// which NaN the hardware returns. Implementations compared with each other
// must agree bit for bit, NaNs included.
func sameElem(d DType, op Op, got, want uint64, reference bool) bool {
	if got == want {
		return true
	}
	return reference && d.IsFloat() && op != Max && op != Min && isNaN(d, want) && isNaN(d, got)
}

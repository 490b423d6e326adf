package reduce

import "math"

// Conversions between float32 and the two 16-bit float formats. Both round to
// nearest, ties to even, handle subnormals exactly (no flush to zero) and keep
// NaN a NaN: a NaN's payload is carried over as far as the narrower format
// has room for it and its quiet bit is set on narrowing, which is exactly
// what the x86 conversion instructions (VCVTPS2PH) do, so the assembly and
// the generic code agree bit for bit.

// Float16FromFloat32 rounds f to the nearest IEEE 754 binary16 value (ties to
// even). Values at or beyond 65520 in magnitude become ±Inf.
func Float16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13) // quiet NaN, top of the payload
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	switch {
	case e >= 0x1f:
		return sign | 0x7c00
	case e <= 0:
		// Subnormal half (or zero). The half's integer significand is the
		// 24-bit float significand shifted right by 14-e; values below
		// 2^-25 (e < -10) round to zero.
		if e < -10 {
			return sign
		}
		m := man | 0x800000
		s := uint(14 - e)
		r := m >> s
		rem := m & (1<<s - 1)
		half := uint32(1) << (s - 1)
		if rem > half || rem == half && r&1 == 1 {
			r++ // may carry into the smallest normal, which encodes correctly
		}
		return sign | uint16(r)
	}
	r := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && r&1 == 1 {
		r++ // a carry out of the mantissa bumps the exponent; 0x7c00 is Inf
	}
	return sign | uint16(r)
}

// Float16ToFloat32 returns the float32 value of the binary16 value h, which
// is always exact. NaN payloads are kept (shifted into place), not quieted.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case 0:
		// Zero or subnormal: man * 2^-24, exact in float32.
		return math.Float32frombits(sign | math.Float32bits(float32(man)*(1.0/(1<<24))))
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// BFloat16FromFloat32 rounds f to the nearest bfloat16 value (ties to even).
// bfloat16 is the upper half of a float32, so rounding is an integer add on
// the bits: subnormals round like any other value and overflow becomes Inf.
func BFloat16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // quiet NaN; the add below could turn it into Inf
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// BFloat16ToFloat32 returns the float32 value of the bfloat16 value h, which
// is always exact.
func BFloat16ToFloat32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

package reduce

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// half16Value is an independent decoding of a binary16 value into float64,
// written from the format definition rather than from Float16ToFloat32.
func half16Value(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0x1f:
		if man != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	case 0:
		return sign * math.Ldexp(man, -24)
	}
	return sign * math.Ldexp(1024+man, exp-25)
}

func TestFloat16ToFloat32Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := Float16ToFloat32(h)
		want := half16Value(h)
		if math.IsNaN(want) {
			bits := math.Float32bits(f)
			if !math.IsNaN(float64(f)) || bits>>31 != uint32(h>>15) || bits>>13&0x3ff != uint32(h&0x3ff) {
				t.Fatalf("Float16ToFloat32(%#04x) = %#08x, want a NaN with the same sign and payload", h, bits)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != (h&0x8000 != 0) {
			t.Fatalf("Float16ToFloat32(%#04x) = %v, want %v", h, f, want)
		}
	}
}

func TestFloat16RoundTripExhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		want := h
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			want = h | 0x200 // NaN comes back quiet, payload kept
		}
		if got := Float16FromFloat32(Float16ToFloat32(h)); got != want {
			t.Fatalf("round trip of %#04x = %#04x, want %#04x", h, got, want)
		}
	}
}

func TestBFloat16RoundTripExhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := BFloat16ToFloat32(h)
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BFloat16ToFloat32(%#04x) = %#08x", h, math.Float32bits(f))
		}
		want := h
		if h&0x7f80 == 0x7f80 && h&0x7f != 0 {
			want = h | 0x40
		}
		if got := BFloat16FromFloat32(f); got != want {
			t.Fatalf("round trip of %#04x = %#04x, want %#04x", h, got, want)
		}
	}
}

// TestFloat16Ties checks every midpoint between adjacent binary16 values
// (both signs, subnormals, and the midpoint between the largest finite value
// and what would be the next, which must round to Inf), and the float32
// values one ulp either side of it.
func TestFloat16Ties(t *testing.T) {
	for _, sign := range []uint16{0, 0x8000} {
		for h := uint16(0); h < 0x7c00; h++ {
			lo, hi := sign|h, sign|(h+1)
			var hiVal float64
			if h+1 == 0x7c00 {
				hiVal = math.Ldexp(1, 16) // the next value if the exponent went on
				if sign != 0 {
					hiVal = -hiVal
				}
			} else {
				hiVal = half16Value(hi)
			}
			mid := float32((half16Value(lo) + hiVal) / 2) // exact: 12 significant bits
			even := lo
			if lo&1 == 1 {
				even = hi
			}
			if got := Float16FromFloat32(mid); got != even {
				t.Fatalf("tie %v between %#04x and %#04x rounded to %#04x, want %#04x", mid, lo, hi, got, even)
			}
			below := math.Float32frombits(math.Float32bits(mid) - 1) // toward zero
			above := math.Float32frombits(math.Float32bits(mid) + 1) // away from zero
			if got := Float16FromFloat32(below); got != lo {
				t.Fatalf("%v just below the tie rounded to %#04x, want %#04x", below, got, lo)
			}
			if got := Float16FromFloat32(above); got != hi {
				t.Fatalf("%v just above the tie rounded to %#04x, want %#04x", above, got, hi)
			}
		}
	}
}

// nearestHalf rounds f to binary16 by searching the table of all finite
// binary16 magnitudes: an independent reference for Float16FromFloat32.
func nearestHalf(mags []float64, f float32) uint16 {
	x := float64(f)
	var sign uint16
	if math.Signbit(x) {
		sign, x = 0x8000, -x
	}
	if math.IsNaN(x) {
		return sign | 0x7e00 | uint16(math.Float32bits(f)>>13&0x3ff)
	}
	if x >= 65520 { // the midpoint above 65504 rounds to even, which is Inf
		return sign | 0x7c00
	}
	i := sort.SearchFloat64s(mags, x) // mags[i-1] < x <= mags[i]
	if mags[i] == x {
		return sign | uint16(i)
	}
	lo, hi := i-1, i
	dl, dh := x-mags[lo], mags[hi]-x
	if dl < dh || dl == dh && lo&1 == 0 {
		return sign | uint16(lo)
	}
	return sign | uint16(hi)
}

func TestFloat16FromFloat32Random(t *testing.T) {
	// Every finite magnitude, then 2^16 where Inf sits in the encoding, so
	// that values between 65504 and 65520 have an upper neighbour.
	mags := make([]float64, 0x7c01)
	for h := range 0x7c00 {
		mags[h] = half16Value(uint16(h))
	}
	mags[0x7c00] = 65536
	// A sweep over the whole float32 space with a prime stride meets every
	// exponent and sign with scattered mantissas.
	for bits := uint64(0); bits < 1<<32; bits += 4099 {
		f := math.Float32frombits(uint32(bits))
		if got, want := Float16FromFloat32(f), nearestHalf(mags, f); got != want {
			t.Fatalf("Float16FromFloat32(%#08x = %v) = %#04x, want %#04x", bits, f, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300000 {
		var bits uint32
		if rng.IntN(4) == 0 {
			bits = rng.Uint32() // anything, including NaN and huge or tiny values
		} else {
			// Exponents around the binary16 range, where rounding is interesting.
			bits = rng.Uint32()&0x807fffff | uint32(127-26+rng.IntN(44))<<23
		}
		f := math.Float32frombits(bits)
		if got, want := Float16FromFloat32(f), nearestHalf(mags, f); got != want {
			t.Fatalf("Float16FromFloat32(%#08x = %v) = %#04x, want %#04x", bits, f, got, want)
		}
	}
}

func TestBFloat16FromFloat32(t *testing.T) {
	ref := nearestBF16
	rng := rand.New(rand.NewPCG(3, 4))
	check := func(bits uint32) {
		if got, want := BFloat16FromFloat32(math.Float32frombits(bits)), ref(bits); got != want {
			t.Fatalf("BFloat16FromFloat32(%#08x) = %#04x, want %#04x", bits, got, want)
		}
	}
	// Every tie and its neighbours, for every finite bfloat16 of both signs.
	for h := range uint32(1 << 16) {
		if h&0x7f80 == 0x7f80 {
			continue
		}
		mid := h<<16 | 0x8000
		check(mid)
		check(mid - 1)
		check(mid + 1)
		if got, want := BFloat16FromFloat32(math.Float32frombits(mid)), uint16(h)+uint16(h&1); got != want {
			t.Fatalf("tie %#08x rounded to %#04x, want %#04x", mid, got, want)
		}
	}
	for bits := uint64(0); bits < 1<<32; bits += 4099 {
		check(uint32(bits))
	}
	for range 300000 {
		check(rng.Uint32())
	}
}

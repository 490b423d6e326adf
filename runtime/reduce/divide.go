package reduce

import "fmt"

// Divide divides every element of buf by n in place: the end of Avg, called
// once on the reduced result. The quotient is x / float32(n) computed in
// float32 for Float16, BFloat16 and Float32 (the 16-bit types rounded once
// back), and x / float64(n) in float64 for Float64. It fails, leaving buf
// untouched, for integer or unknown types, n < 1, or a length that is not a
// multiple of d.Size(). It allocates nothing.
func Divide(d DType, buf []byte, n int) error {
	if !d.IsFloat() {
		return fmt.Errorf("%w: divide on %v", ErrUnsupported, d)
	}
	if n < 1 {
		return fmt.Errorf("reduce: divide %v by %d: divisor must be at least 1", d, n)
	}
	if len(buf)%d.Size() != 0 {
		return fmt.Errorf("reduce: divide %v: length %d is not a multiple of %d", d, len(buf), d.Size())
	}
	dividers[d](buf, n)
	return nil
}

// divider is a Divide body without argument checks.
type divider = func(buf []byte, n int)

// genericDividers is the pure-Go Divide of every float type.
var genericDividers = [numDTypes]divider{
	Float16:  divideF16,
	BFloat16: divideBF16,
	Float32:  divideF32,
	Float64:  divideF64,
}

// buildDividers picks the Divide body of every float type for level l.
func buildDividers(l isaLevel) [numDTypes]divider {
	var t [numDTypes]divider
	for d := Int8; d <= Float64; d++ {
		if !d.IsFloat() {
			continue
		}
		t[d] = archDivider(l, d)
		if t[d] == nil {
			t[d] = genericDividers[d]
		}
	}
	return t
}

func divideF16(buf []byte, n int) {
	f := float32(n)
	for p := buf; len(p) >= 2; p = p[2:] {
		st16(p, Float16FromFloat32(Float16ToFloat32(ld16(p))/f))
	}
}

func divideBF16(buf []byte, n int) {
	f := float32(n)
	for p := buf; len(p) >= 2; p = p[2:] {
		st16(p, BFloat16FromFloat32(BFloat16ToFloat32(ld16(p))/f))
	}
}

func divideF32(buf []byte, n int) {
	f := float32(n)
	for p := buf; len(p) >= 4; p = p[4:] {
		stf32(p, ldf32(p)/f)
	}
}

func divideF64(buf []byte, n int) {
	f := float64(n)
	for p := buf; len(p) >= 8; p = p[8:] {
		stf64(p, ldf64(p)/f)
	}
}

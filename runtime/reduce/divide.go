package reduce

import "fmt"

// Divide divides every element of buf by n in place: the end of Avg, called
// once on the reduced result. The quotient is x / float32(n) computed in
// float32 for Float16, BFloat16 and Float32 (the 16-bit types rounded once
// back), and x / float64(n) in float64 for Float64. It fails, leaving buf
// untouched, for integer or unknown types, n < 1, or a length that is not a
// multiple of d.Size().
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
	switch d {
	case Float16:
		f := float32(n)
		for p := buf; len(p) >= 2; p = p[2:] {
			st16(p, Float16FromFloat32(Float16ToFloat32(ld16(p))/f))
		}
	case BFloat16:
		f := float32(n)
		for p := buf; len(p) >= 2; p = p[2:] {
			st16(p, BFloat16FromFloat32(BFloat16ToFloat32(ld16(p))/f))
		}
	case Float32:
		f := float32(n)
		for p := buf; len(p) >= 4; p = p[4:] {
			stf32(p, ldf32(p)/f)
		}
	case Float64:
		f := float64(n)
		for p := buf; len(p) >= 8; p = p[8:] {
			stf64(p, ldf64(p)/f)
		}
	}
	return nil
}

package reduce

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestDivide compares Divide at every level with the reference: one
// division of the exact value, rounded once.
func TestDivide(t *testing.T) {
	defer useLevel(useLevel(level))
	rng := rand.New(rand.NewPCG(11, 12))
	for _, l := range availableLevels() {
		useLevel(l)
		for _, d := range []DType{Float16, BFloat16, Float32, Float64} {
			// 1<<24+1 is not a float32: the divisor is float32(n) = 1<<24.
			for _, n := range []int{1, 2, 3, 7, 8, 1000, 1<<24 + 1} {
				t.Run(fmt.Sprintf("%v/%v/%d", l, d, n), func(t *testing.T) {
					size := d.Size()
					const count = 2001
					buf, spare := make([]byte, count*size), make([]byte, count*size)
					randomOperands(rng, d, buf, spare)
					orig := bytes.Clone(buf)
					if err := Divide(d, buf, n); err != nil {
						t.Fatal(err)
					}
					div := float64(float32(n))
					if d == Float64 {
						div = float64(n)
					}
					for i := range count {
						x := getElem(orig, i, size)
						want := roundTo(d, floatValue(d, x)/div) // one division, rounded once
						got := getElem(buf, i, size)
						if got != want && !(isNaN(d, got) && isNaN(d, want)) {
							t.Fatalf("element %d: %#x / %d = %#x, want %#x", i, x, n, got, want)
						}
					}
				})
			}
		}
	}
}

// TestDivideLengthsOffsets runs Divide at every level on every length from
// 0 to 1025 elements at buffer offsets 0 to 7 and compares with the generic
// loop bit for bit, with guard bytes around the buffer.
func TestDivideLengthsOffsets(t *testing.T) {
	defer useLevel(useLevel(level))
	const maxN, guard = 1025, 64
	rng := rand.New(rand.NewPCG(13, 14))
	for _, l := range availableLevels() {
		useLevel(l)
		for _, d := range []DType{Float16, BFloat16, Float32, Float64} {
			size := d.Size()
			src, spare := make([]byte, maxN*size), make([]byte, maxN*size)
			randomOperands(rng, d, src, spare)
			want := bytes.Clone(src)
			genericDividers[d](want, 3)
			canary := bytes.Repeat([]byte{0x5a}, guard+8+maxN*size+guard)
			buf := make([]byte, len(canary))
			for n := 0; n <= maxN; n++ {
				nb := n * size
				for off := range 8 {
					copy(buf, canary)
					p := buf[guard+off : guard+off+nb]
					copy(p, src)
					if err := Divide(d, p, 3); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(p, want[:nb]) {
						i := firstBad(d, Sum, p, want[:nb], false)
						t.Fatalf("%v %v n=%d offset=%d: element %d = %#x, generic %#x", l, d, n, off, i,
							getElem(p, i, size), getElem(want, i, size))
					}
					if !bytes.Equal(buf[:guard+off], canary[:guard+off]) || !bytes.Equal(buf[guard+off+nb:], canary[guard+off+nb:]) {
						t.Fatalf("%v %v n=%d offset=%d: bytes outside buf written", l, d, n, off)
					}
				}
			}
		}
	}
}

func TestDivideErrors(t *testing.T) {
	tests := []struct {
		name string
		d    DType
		len  int
		n    int
		is   error
	}{
		{"int32", Int32, 8, 2, ErrUnsupported},
		{"uint8", Uint8, 8, 2, ErrUnsupported},
		{"unknown", 0, 8, 2, ErrUnsupported},
		{"zero divisor", Float32, 8, 0, nil},
		{"negative divisor", Float64, 8, -3, nil},
		{"ragged length", Float32, 10, 2, nil},
		{"ragged half", BFloat16, 3, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := bytes.Repeat([]byte{0x3f}, tt.len)
			err := Divide(tt.d, buf, tt.n)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v, want %v", err, tt.is)
			}
			if !bytes.Equal(buf, bytes.Repeat([]byte{0x3f}, tt.len)) {
				t.Error("buffer changed on error")
			}
		})
	}
	if err := Divide(Float32, nil, 4); err != nil {
		t.Errorf("empty buffer: %v", err)
	}
}

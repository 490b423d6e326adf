package reduce

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestDivide(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, d := range []DType{Float16, BFloat16, Float32, Float64} {
		// 1<<24+1 is not a float32: the divisor is float32(n) = 1<<24.
		for _, n := range []int{1, 2, 3, 7, 8, 1000, 1<<24 + 1} {
			t.Run(fmt.Sprintf("%v/%d", d, n), func(t *testing.T) {
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

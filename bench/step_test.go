package bench

import (
	"slices"
	"testing"
)

func TestParseStep(t *testing.T) {
	for _, tc := range []struct {
		in   string
		elem int
		want []int64 // nil: an error
	}{
		{"2x16K,1x4M", 4, []int64{16 << 10, 16 << 10, 4 << 20}},
		{"12", 4, []int64{12}},
		{" 3x8 , 4 ", 4, []int64{8, 8, 8, 4}},
		{"3x6", 2, []int64{6, 6, 6}},
		{"3x6", 4, nil},
		{"2", 4, nil},
		{"0x16K", 4, nil},
		{"-1x16K", 4, nil},
		{"x16K", 4, nil},
		{"2x", 4, nil},
		{"", 4, nil},
		{"16K,", 4, nil},
		{"5000x4", 4, nil},
	} {
		got, err := ParseStep(tc.in, tc.elem)
		if tc.want == nil {
			if err == nil {
				t.Errorf("ParseStep(%q, %d) = %v, want an error", tc.in, tc.elem, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseStep(%q, %d) = %v, %v; want %v", tc.in, tc.elem, got, err, tc.want)
		}
	}
	if got, err := ParseStep(DefaultStep, 4); err != nil || len(got) != 68 {
		t.Errorf("the default step: %d calls, %v; want 68", len(got), err)
	}
}

// FuzzParseStep: a step ParseStep takes has 1 to maxStepCalls calls, each a
// whole number of elements.
func FuzzParseStep(f *testing.F) {
	for _, s := range []string{DefaultStep, "1", "3x6", "0x4", "4096x4", "1x4,4095x8", "x", ",", "2x3x4"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, elem int) {
		if elem < 1 || elem > 16 {
			return
		}
		sizes, err := ParseStep(s, elem)
		if err != nil {
			return
		}
		if len(sizes) < 1 || len(sizes) > maxStepCalls {
			t.Fatalf("ParseStep(%q) gave %d calls", s, len(sizes))
		}
		for _, b := range sizes {
			if b < int64(elem) || b%int64(elem) != 0 {
				t.Fatalf("ParseStep(%q, %d): a call of %d bytes", s, elem, b)
			}
		}
	})
}

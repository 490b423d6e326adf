package bench

import (
	"slices"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/selector"
)

func TestSizes(t *testing.T) {
	tests := []struct {
		name     string
		min, max int64
		factor   int
		step     int64
		want     []int64
		wantErr  bool
	}{
		{name: "doubling", min: 8, max: 128, factor: 2, want: []int64{8, 16, 32, 64, 128}},
		{name: "max not on the grid", min: 8, max: 100, factor: 2, want: []int64{8, 16, 32, 64}},
		{name: "one size", min: 1 << 20, max: 1 << 20, factor: 2, want: []int64{1 << 20}},
		{name: "factor 4", min: 1, max: 64, factor: 4, want: []int64{1, 4, 16, 64}},
		{name: "zero then on from 1", min: 0, max: 4, factor: 2, want: []int64{0, 1, 2, 4}},
		{name: "step", min: 0, max: 10, factor: 1, step: 4, want: []int64{0, 4, 8}},
		{name: "no overflow near the top", min: 1 << 61, max: 1<<62 + 1, factor: 2, want: []int64{1 << 61, 1 << 62}},
		{name: "max below min", min: 16, max: 8, factor: 2, wantErr: true},
		{name: "no step", min: 8, max: 16, factor: 1, wantErr: true},
		{name: "too many", min: 0, max: 1 << 30, factor: 1, step: 1, wantErr: true},
	}
	for _, tt := range tests {
		got, err := Sizes(tt.min, tt.max, tt.factor, tt.step)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("%s: Sizes(%d, %d, %d, %d) = %v, %v; want %v (error %v)",
				tt.name, tt.min, tt.max, tt.factor, tt.step, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestParseSize holds the sizes bench's flags have always taken, now read
// by selector.ParseBytes, and FormatSize's output parsing back.
func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "0", want: 0}, {in: "8", want: 8}, {in: "64K", want: 64 << 10}, {in: "16M", want: 16 << 20},
		{in: "1G", want: 1 << 30}, {in: "64k", want: 64 << 10}, {in: "1MiB", want: 1 << 20}, {in: "2MB", want: 2 << 20},
		{in: "-1", wantErr: true}, {in: "M", wantErr: true}, {in: "1T", want: 1 << 40}, {in: "1.5K", want: 1536}, {in: "99999999999G", wantErr: true},
	}
	for _, tt := range tests {
		got, err := selector.ParseBytes(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	for _, b := range []int64{0, 8, 100, 1 << 10, 64 << 10, 1 << 20, 3 << 30} {
		if got, err := selector.ParseBytes(FormatSize(b)); err != nil || got != b {
			t.Errorf("ParseBytes(FormatSize(%d) = %q) = %d, %v", b, FormatSize(b), got, err)
		}
	}
}

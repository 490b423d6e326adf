package reduce

import "testing"

// The numbers travel in frame headers; this test pins them.
func TestDTypeNumbersAndNames(t *testing.T) {
	tests := []struct {
		d     DType
		num   uint8
		name  string
		size  int
		float bool
	}{
		{Int8, 1, "int8", 1, false},
		{Uint8, 2, "uint8", 1, false},
		{Int16, 3, "int16", 2, false},
		{Uint16, 4, "uint16", 2, false},
		{Int32, 5, "int32", 4, false},
		{Uint32, 6, "uint32", 4, false},
		{Int64, 7, "int64", 8, false},
		{Uint64, 8, "uint64", 8, false},
		{Float16, 9, "float16", 2, true},
		{BFloat16, 10, "bfloat16", 2, true},
		{Float32, 11, "float32", 4, true},
		{Float64, 12, "float64", 8, true},
		{0, 0, "dtype(0)", 0, false},
		{13, 13, "dtype(13)", 0, false},
	}
	for _, tt := range tests {
		if uint8(tt.d) != tt.num || tt.d.String() != tt.name || tt.d.Size() != tt.size || tt.d.IsFloat() != tt.float {
			t.Errorf("dtype %d: got (%q, size %d, float %v), want (%q, %d, %v)",
				tt.num, tt.d.String(), tt.d.Size(), tt.d.IsFloat(), tt.name, tt.size, tt.float)
		}
	}
}

func TestOpNumbersAndNames(t *testing.T) {
	tests := []struct {
		op   Op
		num  uint8
		name string
	}{
		{Sum, 1, "sum"}, {Prod, 2, "prod"}, {Max, 3, "max"}, {Min, 4, "min"}, {Avg, 5, "avg"},
		{0, 0, "op(0)"}, {6, 6, "op(6)"},
	}
	for _, tt := range tests {
		if uint8(tt.op) != tt.num || tt.op.String() != tt.name {
			t.Errorf("op %d: got %q, want %q", tt.num, tt.op.String(), tt.name)
		}
	}
}

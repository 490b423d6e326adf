package reduce

import "fmt"

// DType names the element type of a buffer being reduced.
type DType uint8

// The element types. The numbers travel in frame headers (wire.Call.DType):
// never renumber them, only append.
const (
	Int8 DType = iota + 1
	Uint8
	Int16
	Uint16
	Int32
	Uint32
	Int64
	Uint64
	Float16  // IEEE 754 binary16
	BFloat16 // the upper half of a float32
	Float32
	Float64
)

// numDTypes bounds the dispatch tables; index 0 is the invalid zero value.
const numDTypes = int(Float64) + 1

var dtypeInfo = [numDTypes]struct {
	name  string
	size  int
	float bool
}{
	Int8:     {"int8", 1, false},
	Uint8:    {"uint8", 1, false},
	Int16:    {"int16", 2, false},
	Uint16:   {"uint16", 2, false},
	Int32:    {"int32", 4, false},
	Uint32:   {"uint32", 4, false},
	Int64:    {"int64", 8, false},
	Uint64:   {"uint64", 8, false},
	Float16:  {"float16", 2, true},
	BFloat16: {"bfloat16", 2, true},
	Float32:  {"float32", 4, true},
	Float64:  {"float64", 8, true},
}

// Valid reports whether d is one of the declared element types.
func (d DType) Valid() bool { return d >= Int8 && d <= Float64 }

// Size returns the number of bytes per element, or 0 for an invalid DType.
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return dtypeInfo[d].size
}

// IsFloat reports whether d is a floating-point type (the only ones Avg and
// Divide accept).
func (d DType) IsFloat() bool { return d.Valid() && dtypeInfo[d].float }

func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

package runtime

import (
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// Float16 is an IEEE 754 binary16 value, stored as its bits.
type Float16 uint16

// BFloat16 is a bfloat16 value (the upper half of a float32), stored as its
// bits.
type BFloat16 uint16

// Float16From rounds f to the nearest Float16 (ties to even).
func Float16From(f float32) Float16 { return Float16(reduce.Float16FromFloat32(f)) }

// Float32 widens h exactly.
func (h Float16) Float32() float32 { return reduce.Float16ToFloat32(uint16(h)) }

// BFloat16From rounds f to the nearest BFloat16 (ties to even).
func BFloat16From(f float32) BFloat16 { return BFloat16(reduce.BFloat16FromFloat32(f)) }

// Float32 widens h exactly.
func (h BFloat16) Float32() float32 { return reduce.BFloat16ToFloat32(uint16(h)) }

// Element is the set of element types the collectives move and reduce.
type Element interface {
	int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64 |
		float32 | float64 | Float16 | BFloat16
}

// dtypeOf maps T onto the reduction kernels' element type.
func dtypeOf[T Element]() reduce.DType {
	var zero T
	switch any(zero).(type) {
	case int8:
		return reduce.Int8
	case uint8:
		return reduce.Uint8
	case int16:
		return reduce.Int16
	case uint16:
		return reduce.Uint16
	case int32:
		return reduce.Int32
	case uint32:
		return reduce.Uint32
	case int64:
		return reduce.Int64
	case uint64:
		return reduce.Uint64
	case float32:
		return reduce.Float32
	case float64:
		return reduce.Float64
	case Float16:
		return reduce.Float16
	case BFloat16:
		return reduce.BFloat16
	}
	panic("unreachable: Element has no other types")
}

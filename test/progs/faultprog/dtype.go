package main

import (
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// ops[T] is how the soak makes and predicts values of one element type.
// Integers take full 64-bit hashes (every reduction wraps, so the order of
// a reduction cannot change its result); floating types take small
// integers, whose sums, products, maxima and averages over four ranks are
// exact in every format down to bfloat16, so every result can be compared
// exactly too.
type ops[T hccl.Element] struct {
	name     string
	size     int
	float    bool
	gen      func(h uint64, op hccl.ReduceOp) T
	reduce   func(op hccl.ReduceOp, hs []uint64) T // the reduction of the ranks' values
	sentinel T                                     // never a payload of a float type
}

// sentinelBits fills integer buffers before a call.
var sentinelBits uint64 = 0x5a5a5a5a5a5a5a5a

type integer interface {
	int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64
}

func intOps[T integer](name string, size int) ops[T] {
	return ops[T]{
		name: name, size: size,
		gen: func(h uint64, _ hccl.ReduceOp) T { return T(h) },
		reduce: func(op hccl.ReduceOp, hs []uint64) T {
			acc := T(hs[0])
			for _, h := range hs[1:] {
				v := T(h)
				switch op {
				case hccl.Sum:
					acc += v
				case hccl.Prod:
					acc *= v
				case hccl.Max:
					acc = max(acc, v)
				case hccl.Min:
					acc = min(acc, v)
				}
			}
			return acc
		},
		sentinel: T(sentinelBits),
	}
}

// small is the integer a float type gets from h: -2..2 for products (four
// ranks: at most 16 in magnitude), -8..8 otherwise (sums at most 32).
func small(h uint64, op hccl.ReduceOp) float64 {
	if op == hccl.Prod {
		return float64(int(h%5) - 2)
	}
	return float64(int(h%17) - 8)
}

func floatOps[T hccl.Element](name string, size int, from func(float64) T) ops[T] {
	return ops[T]{
		name: name, size: size, float: true,
		gen: func(h uint64, op hccl.ReduceOp) T { return from(small(h, op)) },
		reduce: func(op hccl.ReduceOp, hs []uint64) T {
			acc := small(hs[0], op)
			for _, h := range hs[1:] {
				v := small(h, op)
				switch op {
				case hccl.Sum, hccl.Avg:
					acc += v
				case hccl.Prod:
					acc *= v
				case hccl.Max:
					acc = max(acc, v)
				case hccl.Min:
					acc = min(acc, v)
				}
			}
			if op == hccl.Avg {
				acc /= float64(len(hs))
			}
			return from(acc)
		},
		sentinel: from(100),
	}
}

// dtype is one element type of the soak.
type dtype struct {
	name  string
	size  int
	float bool
	run   func(st *soakState, s *spec) error
}

// dtypes runs one call of the soak with each element type.
var dtypes = []dtype{
	typed(intOps[int8]("int8", 1)),
	typed(intOps[uint8]("uint8", 1)),
	typed(intOps[int16]("int16", 2)),
	typed(intOps[uint16]("uint16", 2)),
	typed(intOps[int32]("int32", 4)),
	typed(intOps[uint32]("uint32", 4)),
	typed(intOps[int64]("int64", 8)),
	typed(intOps[uint64]("uint64", 8)),
	typed(floatOps("float32", 4, func(x float64) float32 { return float32(x) })),
	typed(floatOps("float64", 8, func(x float64) float64 { return x })),
	typed(floatOps("float16", 2, func(x float64) hccl.Float16 { return hccl.Float16From(float32(x)) })),
	typed(floatOps("bfloat16", 2, func(x float64) hccl.BFloat16 { return hccl.BFloat16From(float32(x)) })),
}

func typed[T hccl.Element](o ops[T]) dtype {
	return dtype{o.name, o.size, o.float, func(st *soakState, s *spec) error { return runCall(st, o, s) }}
}

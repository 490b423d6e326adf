package main

import (
	"unsafe"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// arena is a buffer reused by every call of the soak, viewed as whatever
// element type the call has: allocating per call would make RSS follow
// the garbage collector rather than the runtime under test.
type arena []uint64

func newArena(bytes int) arena { return make(arena, (bytes+7)/8) }

// view returns the arena as n elements of T; n*sizeof(T) must fit.
func view[T hccl.Element](a arena, n int) []T {
	var zero T
	if n*int(unsafe.Sizeof(zero)) > len(a)*8 {
		panic("arena too small")
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&a[0])), n)
}

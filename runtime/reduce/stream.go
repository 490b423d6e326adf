package reduce

import "unsafe"

// StreamKernel returns the twin of Kernel(d, op) for destinations far
// larger than the caches: it stores the results around the cache
// (non-temporal stores, then a fence) instead of reading each destination
// line in first, as an ordinary store must. That read is a third of the
// memory traffic of a reduction into a buffer that is not one of its
// inputs: the out-of-place AllReduce, ReduceScatter and Reduce, whose first
// reduction reads the send buffer and a peer's data and writes the receive
// buffer. It pays from tens of MiB on and costs below, where the result is
// still in the cache when the next step sends it, so the caller decides by
// the call's size (the runtime's streamMin, runtime/call.go;
// docs/measurements.md#streaming-stores-for-large-reductions).
//
// Where dst is a or b (in place) its lines were just read and are in the
// cache, and the ordinary kernel runs. So it does for the head of dst up to
// the vector alignment the stores need, for types without a streaming
// kernel (the 16-bit floats and 8-bit Prod narrow as they store) and
// without assembly. The returned function checks its arguments as
// Kernel's does, allocates nothing and is safe for concurrent use on
// disjoint buffers.
func StreamKernel(d DType, op Op) (func(dst, a, b []byte), error) {
	if _, err := Kernel(d, op); err != nil {
		return nil, err
	}
	return streamKernels[d][op], nil // Avg's row is Sum's
}

var streamKernels = buildStreamKernels(level)

// buildStreamKernels makes the checked streaming kernel of every valid
// (DType, Op) pair for level l: the ordinary kernel where l has no
// streaming loop.
func buildStreamKernels(l isaLevel) [numDTypes][numOps]loop {
	t := buildKernels(l)
	for d := Int8; d <= Float64; d++ {
		for op := Sum; op <= Min; op++ {
			plain := archLoop(l, d, op)
			stream, align := archStreamLoop(l, d, op)
			if plain == nil || stream == nil {
				continue
			}
			t[d][op] = checked(d, op, streamed(plain, stream, align, d.Size()))
		}
		t[d][Avg] = t[d][Sum]
	}
	return t
}

// streamed runs stream on the part of dst from its first address aligned
// to align bytes, plain on the head before it and wherever dst aliases an
// input.
func streamed(plain, stream loop, align, size int) loop {
	return func(dst, a, b []byte) {
		if len(dst) == 0 || &dst[0] == &a[0] || &dst[0] == &b[0] {
			plain(dst, a, b)
			return
		}
		head := int(-uintptr(unsafe.Pointer(&dst[0])) & uintptr(align-1))
		if head%size != 0 || len(dst)-head < align {
			plain(dst, a, b) // elements not aligned to their size, or too short
			return
		}
		plain(dst[:head], a[:head], b[:head])
		stream(dst[head:], a[head:], b[head:])
	}
}

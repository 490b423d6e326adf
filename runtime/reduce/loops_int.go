package reduce

import "encoding/binary"

// Generic integer loops. They are the whole implementation under -tags noasm
// and on other architectures, the tail of the AVX2 kernels, and the only
// implementation for the types the assembly does not cover (8- and 16-bit
// integers, 64-bit Prod on AVX2). Elements are read and written with
// encoding/binary rather than through unsafe casts: the buffers are
// little-endian on the wire whatever the host, segments may start at any
// byte offset (which checkptr rejects for a cast), and on amd64 and arm64
// the compiler turns these calls into single loads and stores.
//
// Sum and Prod are the same bits for signed and unsigned two's complement
// integers, so they are written once per width over the unsigned type; Max
// and Min are instantiated per signedness. Every loop assumes the caller
// checked len(a) == len(b) == len(dst) (see checked in kernel.go).

func sum8(dst, a, b []byte) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

func prod8(dst, a, b []byte) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = a[i] * b[i]
	}
}

func max8[T int8 | uint8](dst, a, b []byte) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = byte(max(T(a[i]), T(b[i])))
	}
}

func min8[T int8 | uint8](dst, a, b []byte) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] = byte(min(T(a[i]), T(b[i])))
	}
}

func ld16(p []byte, i int) uint16    { return binary.LittleEndian.Uint16(p[i:]) }
func st16(p []byte, i int, v uint16) { binary.LittleEndian.PutUint16(p[i:], v) }
func ld32(p []byte, i int) uint32    { return binary.LittleEndian.Uint32(p[i:]) }
func st32(p []byte, i int, v uint32) { binary.LittleEndian.PutUint32(p[i:], v) }
func ld64(p []byte, i int) uint64    { return binary.LittleEndian.Uint64(p[i:]) }
func st64(p []byte, i int, v uint64) { binary.LittleEndian.PutUint64(p[i:], v) }

func sum16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, ld16(a, i)+ld16(b, i))
	}
}

func prod16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, ld16(a, i)*ld16(b, i))
	}
}

func max16[T int16 | uint16](dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, uint16(max(T(ld16(a, i)), T(ld16(b, i)))))
	}
}

func min16[T int16 | uint16](dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, uint16(min(T(ld16(a, i)), T(ld16(b, i)))))
	}
}

func sum32(dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		st32(dst, i, ld32(a, i)+ld32(b, i))
	}
}

func prod32(dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		st32(dst, i, ld32(a, i)*ld32(b, i))
	}
}

func max32[T int32 | uint32](dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		st32(dst, i, uint32(max(T(ld32(a, i)), T(ld32(b, i)))))
	}
}

func min32[T int32 | uint32](dst, a, b []byte) {
	for i := 0; i+4 <= len(dst); i += 4 {
		st32(dst, i, uint32(min(T(ld32(a, i)), T(ld32(b, i)))))
	}
}

func sum64(dst, a, b []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		st64(dst, i, ld64(a, i)+ld64(b, i))
	}
}

func prod64(dst, a, b []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		st64(dst, i, ld64(a, i)*ld64(b, i))
	}
}

func max64[T int64 | uint64](dst, a, b []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		st64(dst, i, uint64(max(T(ld64(a, i)), T(ld64(b, i)))))
	}
}

func min64[T int64 | uint64](dst, a, b []byte) {
	for i := 0; i+8 <= len(dst); i += 8 {
		st64(dst, i, uint64(min(T(ld64(a, i)), T(ld64(b, i)))))
	}
}

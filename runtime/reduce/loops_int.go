package reduce

import "encoding/binary"

// Generic integer byte loops. With the typed loops (loops_typed.go) they are
// the whole implementation under -tags noasm and on other architectures, and
// the tail of the AVX2 kernels. They read and write elements with
// encoding/binary, which is right on every host (the buffers are
// little-endian whatever the host) and at every byte offset (a cast of a
// misaligned pointer is undefined on some CPUs and rejected by checkptr);
// the typed loops take over when neither concern applies.
//
// Sum and Prod are the same bits for signed and unsigned two's complement
// integers, so they are written once per width over the unsigned type; Max
// and Min are instantiated per signedness. The caller has checked that
// len(a) == len(b) == len(dst) (see checked in kernel.go); the loops still
// test all three lengths because that lets the compiler drop every bounds
// check from the body.

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

func ld16(p []byte) uint16    { return binary.LittleEndian.Uint16(p) }
func st16(p []byte, v uint16) { binary.LittleEndian.PutUint16(p, v) }
func ld32(p []byte) uint32    { return binary.LittleEndian.Uint32(p) }
func st32(p []byte, v uint32) { binary.LittleEndian.PutUint32(p, v) }
func ld64(p []byte) uint64    { return binary.LittleEndian.Uint64(p) }
func st64(p []byte, v uint64) { binary.LittleEndian.PutUint64(p, v) }

func sum16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, ld16(a)+ld16(b))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func prod16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, ld16(a)*ld16(b))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func max16[T int16 | uint16](dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, uint16(max(T(ld16(a)), T(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func min16[T int16 | uint16](dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, uint16(min(T(ld16(a)), T(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func sum32(dst, a, b []byte) {
	for len(dst) >= 4 && len(a) >= 4 && len(b) >= 4 {
		st32(dst, ld32(a)+ld32(b))
		dst, a, b = dst[4:], a[4:], b[4:]
	}
}

func prod32(dst, a, b []byte) {
	for len(dst) >= 4 && len(a) >= 4 && len(b) >= 4 {
		st32(dst, ld32(a)*ld32(b))
		dst, a, b = dst[4:], a[4:], b[4:]
	}
}

func max32[T int32 | uint32](dst, a, b []byte) {
	for len(dst) >= 4 && len(a) >= 4 && len(b) >= 4 {
		st32(dst, uint32(max(T(ld32(a)), T(ld32(b)))))
		dst, a, b = dst[4:], a[4:], b[4:]
	}
}

func min32[T int32 | uint32](dst, a, b []byte) {
	for len(dst) >= 4 && len(a) >= 4 && len(b) >= 4 {
		st32(dst, uint32(min(T(ld32(a)), T(ld32(b)))))
		dst, a, b = dst[4:], a[4:], b[4:]
	}
}

func sum64(dst, a, b []byte) {
	for len(dst) >= 8 && len(a) >= 8 && len(b) >= 8 {
		st64(dst, ld64(a)+ld64(b))
		dst, a, b = dst[8:], a[8:], b[8:]
	}
}

func prod64(dst, a, b []byte) {
	for len(dst) >= 8 && len(a) >= 8 && len(b) >= 8 {
		st64(dst, ld64(a)*ld64(b))
		dst, a, b = dst[8:], a[8:], b[8:]
	}
}

func max64[T int64 | uint64](dst, a, b []byte) {
	for len(dst) >= 8 && len(a) >= 8 && len(b) >= 8 {
		st64(dst, uint64(max(T(ld64(a)), T(ld64(b)))))
		dst, a, b = dst[8:], a[8:], b[8:]
	}
}

func min64[T int64 | uint64](dst, a, b []byte) {
	for len(dst) >= 8 && len(a) >= 8 && len(b) >= 8 {
		st64(dst, uint64(min(T(ld64(a)), T(ld64(b)))))
		dst, a, b = dst[8:], a[8:], b[8:]
	}
}

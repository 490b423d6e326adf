//go:build 386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm

package reduce

import "unsafe"

// asTyped views p as a []T when that reads the same values as decoding p
// little-endian: on these little-endian architectures, whenever p starts
// at an address aligned for T (which checkptr and some CPUs require).
// Buffers that come from user slices of T are aligned, so this is the
// common case; misaligned segments take the encoding/binary loops.
func asTyped[T any](p []byte) ([]T, bool) {
	var zero T
	if len(p) == 0 {
		return nil, true
	}
	ptr := unsafe.Pointer(unsafe.SliceData(p))
	if uintptr(ptr)%unsafe.Alignof(zero) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(ptr), len(p)/int(unsafe.Sizeof(zero))), true
}

// hostOrder converts the size-byte elements of p between little-endian
// and the host's order, in place: nothing to do on these architectures.
func hostOrder(p []byte, size int) {}

//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package reduce

import "slices"

// asTyped never applies on big-endian architectures: a []T view would read
// the little-endian wire bytes reversed, so every kernel works on copies
// (loops.go).
func asTyped[T any]([]byte) ([]T, bool) { return nil, false }

// hostOrder converts the size-byte elements of p between little-endian
// and the host's order, in place (the conversion is its own inverse).
func hostOrder(p []byte, size int) {
	if size == 1 {
		return
	}
	for ; len(p) >= size; p = p[size:] {
		slices.Reverse(p[:size])
	}
}

//go:build !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64 || wasm)

package reduce

// asTyped never applies on big-endian architectures: a []T view would read
// the little-endian wire bytes reversed, so every loop decodes with
// encoding/binary.
func asTyped[T any]([]byte) ([]T, bool) { return nil, false }

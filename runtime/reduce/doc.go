// Package reduce holds the element-wise reduction kernels of the runtime:
// dst[i] = a[i] op b[i] over byte slices holding little-endian elements of
// one DType, for the operators Sum, Prod, Max, Min and Avg (which reduces as
// Sum; Divide finishes it). The runtime front maps its Go element types onto
// DType; the executor calls the kernels on segments of buffers, so a kernel
// takes []byte at any alignment and allocates nothing.
//
// # Semantics
//
// Integer Sum and Prod wrap (two's complement, as in Go). Float16 and
// BFloat16 are computed in float32 and rounded once per operation back to 16
// bits (round to nearest even, subnormals kept). Float Max and Min follow one
// rule, bit for bit in every implementation: a NaN in a is the result, else
// a NaN in b (bits kept; the 16-bit types set the quiet bit on narrowing),
// else the larger (smaller) value, with -0 < +0. Float Sum and
// Prod return a NaN in a (quieted), else a NaN in b, else the hardware's
// default NaN for an invalid operation. See float.go.
//
// # Implementations
//
// Every (DType, Op) pair has a pure-Go loop (loops*.go), the only code under
// -tags noasm and off amd64. On amd64 every (DType, Op) pair also has AVX2
// and AVX-512 kernels, and Divide is vectorised too. The assembly
// (kernels_amd64.s) is generated with avo by the program in _gen (go
// generate); the best level the CPU supports is chosen once at init
// (dispatch_amd64.go). The tests run every level this machine has and
// compare the assembly with the Go loops bit for bit, and the Go loops with
// a naive per-element reference.
//
// StreamKernel is Kernel's twin for destinations far larger than the
// caches, for the calls the runtime reduces tens of MiB in: where the
// stores are plain vector moves it stores around the cache (VMOVNTDQ,
// then SFENCE) and so spares the memory the read of each destination line
// an ordinary store makes first (stream.go).
package reduce

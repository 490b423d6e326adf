package reduce

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// firstBad returns the index of the first element of got that is not an
// acceptable result given want (see sameElem), or -1.
func firstBad(d DType, op Op, got, want []byte, reference bool) int {
	if bytes.Equal(got, want) {
		return -1
	}
	size := d.Size()
	for i := range len(got) / size {
		if !sameElem(d, op, getElem(got, i, size), getElem(want, i, size), reference) {
			return i
		}
	}
	return -1
}

// TestKernelMatchesReference compares every kernel, at every level this
// CPU supports, with the naive per-element reference on random operands
// full of NaN, Inf, -0, subnormals and integer overflow.
func TestKernelMatchesReference(t *testing.T) {
	defer useLevel(useLevel(level))
	const n = 5003 // odd, to end in a partial vector
	rng := rand.New(rand.NewPCG(5, 6))
	for _, l := range availableLevels() {
		useLevel(l)
		for _, d := range allDTypes {
			for _, op := range allOps {
				if op == Avg && !d.IsFloat() {
					continue
				}
				t.Run(fmt.Sprintf("%v/%v/%v", l, d, op), func(t *testing.T) {
					size := d.Size()
					a, b := make([]byte, n*size), make([]byte, n*size)
					randomOperands(rng, d, a, b)
					want := make([]byte, n*size)
					for i := range n {
						putElem(want, i, size, refOp(d, op, getElem(a, i, size), getElem(b, i, size)))
					}
					k, err := Kernel(d, op)
					if err != nil {
						t.Fatal(err)
					}
					got := make([]byte, n*size)
					k(got, a, b)
					if i := firstBad(d, op, got, want, true); i >= 0 {
						t.Fatalf("element %d: %#x %v %#x = %#x, want %#x", i,
							getElem(a, i, size), op, getElem(b, i, size), getElem(got, i, size), getElem(want, i, size))
					}
				})
			}
		}
	}
}

// TestKernelLengthsOffsetsAliasing runs every kernel at every level on
// every length from 0 to 1025 elements with the three slices starting 0 to
// 7 bytes into their buffers (different misalignments for dst, a and b),
// separate or with dst aliasing a or b, and compares with the generic loop
// bit for bit. Every (length, offset) pair runs in one aliasing mode, in
// turn, and lengths up to 80 in all three. Guard bytes around dst catch
// writes past either end (the masked AVX-512 tail), and a and b must come
// back unchanged when they are not dst. The expected values come from the
// generic kernel on aligned buffers, which runs the typed loops on views;
// at the generic level the misaligned slices run them on copies, so this
// also holds the two generic paths to each other bit for bit.
func TestKernelLengthsOffsetsAliasing(t *testing.T) {
	defer useLevel(useLevel(level))
	const maxN = 1025
	const guard = 64
	rng := rand.New(rand.NewPCG(7, 8))
	modes := []string{"separate", "dst=a", "dst=b"}
	for _, l := range availableLevels() {
		useLevel(l)
		for _, d := range allDTypes {
			for _, op := range []Op{Sum, Prod, Max, Min} {
				for _, kind := range kernelKinds {
					t.Run(fmt.Sprintf("%v/%v/%v/%s", l, d, op, kind.name), func(t *testing.T) {
						size := d.Size()
						a, b := make([]byte, maxN*size), make([]byte, maxN*size)
						randomOperands(rng, d, a, b)
						want := make([]byte, maxN*size)
						genericLoops[d][op](want, a, b) // element-wise: a prefix is the answer for any length
						k, _ := kind.get(d, op)
						canary := bytes.Repeat([]byte{0xa5}, guard+8+maxN*size+guard)
						var bufs [3][]byte
						for i := range bufs {
							bufs[i] = make([]byte, len(canary))
						}
						for n := 0; n <= maxN; n++ {
							nb := n * size
							for off := range 8 {
								for mi, mode := range modes {
									if n > 80 && mi != (n+off)%len(modes) {
										continue
									}
									end := guard + 8 + nb + guard
									copy(bufs[0][:end], canary)
									dst := bufs[0][guard+off : guard+off+nb]
									ao, bo := guard+(off+3)%8, guard+(off+6)%8
									sa, sb := bufs[1][ao:ao+nb], bufs[2][bo:bo+nb]
									switch mode {
									case "dst=a":
										sa = dst
									case "dst=b":
										sb = dst
									}
									copy(sa, a[:nb])
									copy(sb, b[:nb])
									k(dst, sa, sb)
									if i := firstBad(d, op, dst, want[:nb], false); i >= 0 {
										t.Fatalf("n=%d offset=%d %s: element %d: %#x %v %#x = %#x, generic %#x", n, off, mode, i,
											getElem(a, i, size), op, getElem(b, i, size), getElem(dst, i, size), getElem(want, i, size))
									}
									if !bytes.Equal(bufs[0][:guard+off], canary[:guard+off]) ||
										!bytes.Equal(bufs[0][guard+off+nb:end], canary[guard+off+nb:end]) {
										t.Fatalf("n=%d offset=%d %s: bytes outside dst written", n, off, mode)
									}
									if mode == "separate" && (!bytes.Equal(sa, a[:nb]) || !bytes.Equal(sb, b[:nb])) {
										t.Fatalf("n=%d offset=%d: an operand changed", n, off)
									}
								}
							}
						}
					})
				}
			}
		}
	}
}

// kernelKinds are the two kernel tables: ordinary stores and streaming
// ones (stream.go), which must compute alike.
var kernelKinds = []struct {
	name string
	get  func(DType, Op) (func(dst, a, b []byte), error)
}{{"plain", Kernel}, {"stream", StreamKernel}}

func TestKernelErrors(t *testing.T) {
	tests := []struct {
		d  DType
		op Op
	}{
		{Int8, Avg}, {Uint64, Avg}, {Int32, Avg}, {0, Sum}, {13, Sum}, {Float32, 0}, {Float32, 6},
	}
	for _, tt := range tests {
		if k, err := Kernel(tt.d, tt.op); !errors.Is(err, ErrUnsupported) || k != nil {
			t.Errorf("Kernel(%v, %v) = (%v, %v), want ErrUnsupported", tt.d, tt.op, k != nil, err)
		}
	}
	for _, d := range allDTypes {
		for _, op := range allOps {
			if k, err := Kernel(d, op); (err == nil) != (op != Avg || d.IsFloat()) || (err == nil) != (k != nil) {
				t.Errorf("Kernel(%v, %v): err %v", d, op, err)
			}
		}
	}
}

func TestKernelPanicsOnBadLengths(t *testing.T) {
	tests := []struct {
		name      string
		d         DType
		dst, a, b int
	}{
		{"short a", Float32, 64, 60, 64},
		{"short b", Float64, 64, 64, 56},
		{"long a", Int32, 64, 68, 64},
		{"not a multiple", Float32, 63, 63, 63},
		{"half not a multiple", Float16, 7, 7, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := Kernel(tt.d, Sum)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if recover() == nil {
					t.Errorf("no panic for lengths %d/%d/%d", tt.dst, tt.a, tt.b)
				}
			}()
			k(make([]byte, tt.dst), make([]byte, tt.a), make([]byte, tt.b))
		})
	}
}

// TestAvgReducesAsSum: Avg is Sum until the caller divides.
func TestAvgReducesAsSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, d := range []DType{Float16, BFloat16, Float32, Float64} {
		size := d.Size()
		a, b := make([]byte, 999*size), make([]byte, 999*size)
		randomOperands(rng, d, a, b)
		sum, avg := make([]byte, len(a)), make([]byte, len(a))
		ks, _ := Kernel(d, Sum)
		ka, _ := Kernel(d, Avg)
		ks(sum, a, b)
		ka(avg, a, b)
		if i := firstBad(d, Sum, avg, sum, false); i >= 0 {
			t.Errorf("%v: avg and sum differ at element %d", d, i)
		}
	}
}

// TestDetectedLevel records which implementation the package chose.
func TestDetectedLevel(t *testing.T) {
	t.Logf("kernel level: %v", detected)
	if got := Implementation(); got != detected.String() {
		t.Errorf("Implementation() = %q, want %q", got, detected)
	}
}

// The executor calls kernels in its steady state, which allocates nothing.
func TestKernelAndDivideDoNotAllocate(t *testing.T) {
	buf, src, dst := make([]byte, 4096+8), make([]byte, 4096+8), make([]byte, 4096)
	for _, d := range allDTypes {
		for _, op := range []Op{Sum, Prod, Max, Min} {
			for _, kind := range kernelKinds {
				k, _ := kind.get(d, op)
				if n := testing.AllocsPerRun(10, func() { k(dst, buf[:4096], src[3:4099]) }); n != 0 {
					t.Errorf("%v %v %s kernel: %v allocations per call", d, op, kind.name, n)
				}
			}
		}
		if d.IsFloat() {
			if n := testing.AllocsPerRun(10, func() { _ = Divide(d, buf[1:4097], 7) }); n != 0 {
				t.Errorf("%v Divide: %v allocations per call", d, n)
			}
		}
	}
}

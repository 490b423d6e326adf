package reduce

import (
	"fmt"
	"math"
	goruntime "runtime"
	"testing"
	"time"
)

// BenchmarkSumFloat32 measures the in-place float32 Sum kernel (dst == a, as
// the executor's RecvReduce uses it) at every level this CPU has, next to a
// plain single-core Go loop a[i] += b[i] over []float32 in the same run.
// GB/s counts the bytes touched: a read, b read, a written; cpuGB/s divides
// the same bytes by the CPU time of the benchmark's thread instead of wall
// time, which is the steadier figure on a shared machine.
func BenchmarkSumFloat32(b *testing.B) {
	defer useLevel(useLevel(level))
	for _, size := range []int{64 << 10, 64 << 20} {
		name := fmt.Sprintf("%dKiB", size>>10)
		if size >= 1<<20 {
			name = fmt.Sprintf("%dMiB", size>>20)
		}
		x, y := make([]byte, size), make([]byte, size)
		for i := 0; i+4 <= size; i += 4 {
			stf32(x[i:], float32(i%1000))
			stf32(y[i:], 1)
		}
		for _, l := range availableLevels() {
			b.Run(fmt.Sprintf("%s/%v", name, l), func(b *testing.B) {
				useLevel(l)
				k, _ := Kernel(Float32, Sum)
				b.SetBytes(int64(3 * size))
				defer cpuClock(b)(3 * size)
				for b.Loop() {
					k(x, x, y)
				}
			})
		}
		b.Run(name+"/plain-loop", func(b *testing.B) {
			fa, fb := make([]float32, size/4), make([]float32, size/4)
			for i := range fa {
				fa[i], fb[i] = float32(i%1000), 1
			}
			b.SetBytes(int64(3 * size))
			defer cpuClock(b)(3 * size)
			for b.Loop() {
				plainAdd(fa, fb)
			}
			if math.IsNaN(float64(fa[0])) {
				b.Fatal("unreachable: keeps fa live")
			}
		})
		// copy (runtime memmove) is the ceiling for one core: it touches
		// 2 bytes per byte copied where the kernel touches 3.
		b.Run(name+"/copy", func(b *testing.B) {
			b.SetBytes(int64(2 * size))
			defer cpuClock(b)(2 * size)
			for b.Loop() {
				copy(y, x)
			}
		})
	}
}

// plainAdd is the baseline: what a Go programmer writes without assembly.
//
//go:noinline
func plainAdd(a, b []float32) {
	b = b[:len(a)]
	for i := range a {
		a[i] += b[i]
	}
}

// cpuClock pins the benchmark to its OS thread and starts the thread's CPU
// clock; the function it returns reports GB/s (wall) and cpuGB/s for
// bytesPerOp bytes touched per iteration.
func cpuClock(b *testing.B) func(bytesPerOp int) {
	goruntime.LockOSThread()
	start := threadCPU()
	return func(bytesPerOp int) {
		cpu := threadCPU() - start
		goruntime.UnlockOSThread()
		total := float64(bytesPerOp) * float64(b.N)
		if s := b.Elapsed().Seconds(); s > 0 {
			b.ReportMetric(total/s/1e9, "GB/s")
		}
		if cpu > time.Millisecond {
			b.ReportMetric(total/cpu.Seconds()/1e9, "cpuGB/s")
		}
	}
}

// BenchmarkKernel measures every in-place kernel at 64 KiB (in cache, the
// executor's segment scale) at the best level, and Divide: the per-byte
// reduction cost for the selector's cost model.
func BenchmarkKernel(b *testing.B) {
	const size = 64 << 10
	x, y := make([]byte, size), make([]byte, size)
	for _, d := range allDTypes {
		for _, op := range []Op{Sum, Prod, Max, Min} {
			b.Run(fmt.Sprintf("%v/%v", d, op), func(b *testing.B) {
				k, _ := Kernel(d, op)
				b.SetBytes(3 * size)
				defer cpuClock(b)(3 * size)
				for b.Loop() {
					k(x, x, y)
				}
			})
		}
		if d.IsFloat() {
			b.Run(fmt.Sprintf("%v/divide", d), func(b *testing.B) {
				b.SetBytes(2 * size)
				defer cpuClock(b)(2 * size)
				for b.Loop() {
					_ = Divide(d, x, 3)
				}
			})
		}
	}
}

// BenchmarkOutOfPlace measures float32 Sum into a destination that is
// neither input (an out-of-place reduction) at 64 MiB, with ordinary
// stores (Kernel) and around the cache (StreamKernel). GB/s counts the
// bytes the caller asked for: a and b read, dst written; ordinary stores
// also read every line of dst first.
func BenchmarkOutOfPlace(b *testing.B) {
	const size = 64 << 20
	x, y, dst := make([]byte, size), make([]byte, size), make([]byte, size)
	for i := 0; i+4 <= size; i += 4 {
		stf32(x[i:], float32(i%1000))
		stf32(y[i:], 1)
	}
	for _, kind := range kernelKinds {
		b.Run(kind.name, func(b *testing.B) {
			k, _ := kind.get(Float32, Sum)
			b.SetBytes(3 * size)
			defer cpuClock(b)(3 * size)
			for b.Loop() {
				k(dst, x, y)
			}
		})
	}
}

// BenchmarkMisaligned measures the generic kernels on buffers one byte off
// their alignment, where no []T view applies and the kernels copy (the
// path of misaligned segments without assembly, and of big-endian hosts),
// at 64 KiB, out of place so the operands stay the same across iterations.
// The 8-bit types are absent: bytes are always aligned for them.
func BenchmarkMisaligned(b *testing.B) {
	defer useLevel(useLevel(levelGeneric))
	const size = 64 << 10
	x, y, dst := make([]byte, size+1), make([]byte, size+1), make([]byte, size+1)
	for i := range x {
		x[i], y[i] = byte(i), byte(3*i+1)
	}
	for _, d := range allDTypes {
		if d.Size() == 1 {
			continue
		}
		for _, op := range []Op{Sum, Prod, Max, Min} {
			b.Run(fmt.Sprintf("%v/%v", d, op), func(b *testing.B) {
				k, _ := Kernel(d, op)
				b.SetBytes(3 * size)
				defer cpuClock(b)(3 * size)
				for b.Loop() {
					k(dst[1:], x[1:], y[1:])
				}
			})
		}
	}
}

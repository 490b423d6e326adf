//go:build !noasm && gc

package reduce

import "golang.org/x/sys/cpu"

// detectLevel picks AVX-512 > AVX2 > generic from the CPU. The AVX-512
// kernels also use AVX512DQ (VPMULLQ) and BMI2 (BZHI, for the tail mask);
// every CPU with AVX-512F that we know of has both, but we check rather
// than fault. x/sys/cpu already folds in whether the OS saves the ZMM state.
func detectLevel() isaLevel {
	x := cpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512DQ && x.HasBMI2 && x.HasAVX2:
		return levelAVX512
	case x.HasAVX2:
		return levelAVX2
	}
	return levelGeneric
}

// avx512Loops handle every element themselves, the last partial vector
// with a masked load and store.
var avx512Loops = [numDTypes][numOps]loop{
	Int32:    {Sum: sumInt32AVX512, Prod: prodInt32AVX512, Max: maxInt32AVX512, Min: minInt32AVX512},
	Uint32:   {Sum: sumInt32AVX512, Prod: prodInt32AVX512, Max: maxUint32AVX512, Min: minUint32AVX512},
	Int64:    {Sum: sumInt64AVX512, Prod: prodInt64AVX512, Max: maxInt64AVX512, Min: minInt64AVX512},
	Uint64:   {Sum: sumInt64AVX512, Prod: prodInt64AVX512, Max: maxUint64AVX512, Min: minUint64AVX512},
	Float16:  {Sum: sumFloat16AVX512, Prod: prodFloat16AVX512, Max: maxFloat16AVX512, Min: minFloat16AVX512},
	BFloat16: {Sum: sumBFloat16AVX512, Prod: prodBFloat16AVX512, Max: maxBFloat16AVX512, Min: minBFloat16AVX512},
	Float32:  {Sum: sumFloat32AVX512, Prod: prodFloat32AVX512, Max: maxFloat32AVX512, Min: minFloat32AVX512},
	Float64:  {Sum: sumFloat64AVX512, Prod: prodFloat64AVX512, Max: maxFloat64AVX512, Min: minFloat64AVX512},
}

// avx2Loops handle whole vectors only (see avx2Tail). There is no AVX2
// 64-bit multiply, so 64-bit Prod stays generic.
var avx2Loops = [numDTypes][numOps]loop{
	Int32:    {Sum: sumInt32AVX2, Prod: prodInt32AVX2, Max: maxInt32AVX2, Min: minInt32AVX2},
	Uint32:   {Sum: sumInt32AVX2, Prod: prodInt32AVX2, Max: maxUint32AVX2, Min: minUint32AVX2},
	Int64:    {Sum: sumInt64AVX2, Max: maxInt64AVX2, Min: minInt64AVX2},
	Uint64:   {Sum: sumInt64AVX2, Max: maxUint64AVX2, Min: minUint64AVX2},
	Float16:  {Sum: sumFloat16AVX2, Prod: prodFloat16AVX2, Max: maxFloat16AVX2, Min: minFloat16AVX2},
	BFloat16: {Sum: sumBFloat16AVX2, Prod: prodBFloat16AVX2, Max: maxBFloat16AVX2, Min: minBFloat16AVX2},
	Float32:  {Sum: sumFloat32AVX2, Prod: prodFloat32AVX2, Max: maxFloat32AVX2, Min: minFloat32AVX2},
	Float64:  {Sum: sumFloat64AVX2, Prod: prodFloat64AVX2, Max: maxFloat64AVX2, Min: minFloat64AVX2},
}

// archLoop returns the assembly loop for (d, op) at level l, or nil when
// there is none and the generic loop should be used.
func archLoop(l isaLevel, d DType, op Op) loop {
	switch l {
	case levelAVX512:
		return avx512Loops[d][op]
	case levelAVX2:
		f := avx2Loops[d][op]
		if f == nil || d == Float16 && !cpu.X86.HasF16C {
			return nil
		}
		// One AVX2 vector covers 32 bytes of each operand, or 16 bytes
		// of 16-bit floats (widened to eight float32 lanes).
		block := 32
		if d.Size() == 2 {
			block = 16
		}
		return avx2Tail(f, genericLoops[d][op], block)
	}
	return nil
}

// avx2Tail completes an AVX2 loop, which stops at the last whole block of
// each operand, with the generic loop on the remaining bytes.
func avx2Tail(f, tail loop, block int) loop {
	return func(dst, a, b []byte) {
		f(dst, a, b)
		if m := len(dst) &^ (block - 1); m < len(dst) {
			tail(dst[m:], a[m:], b[m:])
		}
	}
}

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
// with a masked load and store. The 8- and 16-bit integer kernels need
// AVX512BW as well (see archLoop). x86 has no 8-bit multiply: 8-bit Prod
// widens to 16-bit lanes.
var avx512Loops = [numDTypes][numOps]loop{
	Int8:     {Sum: sumInt8AVX512, Prod: prodInt8AVX512, Max: maxInt8AVX512, Min: minInt8AVX512},
	Uint8:    {Sum: sumInt8AVX512, Prod: prodInt8AVX512, Max: maxUint8AVX512, Min: minUint8AVX512},
	Int16:    {Sum: sumInt16AVX512, Prod: prodInt16AVX512, Max: maxInt16AVX512, Min: minInt16AVX512},
	Uint16:   {Sum: sumInt16AVX512, Prod: prodInt16AVX512, Max: maxUint16AVX512, Min: minUint16AVX512},
	Int32:    {Sum: sumInt32AVX512, Prod: prodInt32AVX512, Max: maxInt32AVX512, Min: minInt32AVX512},
	Uint32:   {Sum: sumInt32AVX512, Prod: prodInt32AVX512, Max: maxUint32AVX512, Min: minUint32AVX512},
	Int64:    {Sum: sumInt64AVX512, Prod: prodInt64AVX512, Max: maxInt64AVX512, Min: minInt64AVX512},
	Uint64:   {Sum: sumInt64AVX512, Prod: prodInt64AVX512, Max: maxUint64AVX512, Min: minUint64AVX512},
	Float16:  {Sum: sumFloat16AVX512, Prod: prodFloat16AVX512, Max: maxFloat16AVX512, Min: minFloat16AVX512},
	BFloat16: {Sum: sumBFloat16AVX512, Prod: prodBFloat16AVX512, Max: maxBFloat16AVX512, Min: minBFloat16AVX512},
	Float32:  {Sum: sumFloat32AVX512, Prod: prodFloat32AVX512, Max: maxFloat32AVX512, Min: minFloat32AVX512},
	Float64:  {Sum: sumFloat64AVX512, Prod: prodFloat64AVX512, Max: maxFloat64AVX512, Min: minFloat64AVX512},
}

// avx2Loops handle whole vectors only (see avx2Tail). AVX2 has no 64-bit
// multiply: 64-bit Prod is built from 32-bit ones.
var avx2Loops = [numDTypes][numOps]loop{
	Int8:     {Sum: sumInt8AVX2, Prod: prodInt8AVX2, Max: maxInt8AVX2, Min: minInt8AVX2},
	Uint8:    {Sum: sumInt8AVX2, Prod: prodInt8AVX2, Max: maxUint8AVX2, Min: minUint8AVX2},
	Int16:    {Sum: sumInt16AVX2, Prod: prodInt16AVX2, Max: maxInt16AVX2, Min: minInt16AVX2},
	Uint16:   {Sum: sumInt16AVX2, Prod: prodInt16AVX2, Max: maxUint16AVX2, Min: minUint16AVX2},
	Int32:    {Sum: sumInt32AVX2, Prod: prodInt32AVX2, Max: maxInt32AVX2, Min: minInt32AVX2},
	Uint32:   {Sum: sumInt32AVX2, Prod: prodInt32AVX2, Max: maxUint32AVX2, Min: minUint32AVX2},
	Int64:    {Sum: sumInt64AVX2, Prod: prodInt64AVX2, Max: maxInt64AVX2, Min: minInt64AVX2},
	Uint64:   {Sum: sumInt64AVX2, Prod: prodInt64AVX2, Max: maxUint64AVX2, Min: minUint64AVX2},
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
		if !d.IsFloat() && d.Size() <= 2 && !cpu.X86.HasAVX512BW {
			return archLoop(levelAVX2, d, op)
		}
		return avx512Loops[d][op]
	case levelAVX2:
		f := avx2Loops[d][op]
		if f == nil || d == Float16 && !cpu.X86.HasF16C {
			return nil
		}
		return avx2Tail(f, genericLoops[d][op], avx2Block(d, op))
	}
	return nil
}

// avx512StreamLoops and avx2StreamLoops are the loops of the same rows
// that store whole vectors around the cache (stream.go); nil where the
// stores narrow.
var avx512StreamLoops = [numDTypes][numOps]loop{
	Int8:    {Sum: sumInt8AVX512Stream, Max: maxInt8AVX512Stream, Min: minInt8AVX512Stream},
	Uint8:   {Sum: sumInt8AVX512Stream, Max: maxUint8AVX512Stream, Min: minUint8AVX512Stream},
	Int16:   {Sum: sumInt16AVX512Stream, Prod: prodInt16AVX512Stream, Max: maxInt16AVX512Stream, Min: minInt16AVX512Stream},
	Uint16:  {Sum: sumInt16AVX512Stream, Prod: prodInt16AVX512Stream, Max: maxUint16AVX512Stream, Min: minUint16AVX512Stream},
	Int32:   {Sum: sumInt32AVX512Stream, Prod: prodInt32AVX512Stream, Max: maxInt32AVX512Stream, Min: minInt32AVX512Stream},
	Uint32:  {Sum: sumInt32AVX512Stream, Prod: prodInt32AVX512Stream, Max: maxUint32AVX512Stream, Min: minUint32AVX512Stream},
	Int64:   {Sum: sumInt64AVX512Stream, Prod: prodInt64AVX512Stream, Max: maxInt64AVX512Stream, Min: minInt64AVX512Stream},
	Uint64:  {Sum: sumInt64AVX512Stream, Prod: prodInt64AVX512Stream, Max: maxUint64AVX512Stream, Min: minUint64AVX512Stream},
	Float32: {Sum: sumFloat32AVX512Stream, Prod: prodFloat32AVX512Stream, Max: maxFloat32AVX512Stream, Min: minFloat32AVX512Stream},
	Float64: {Sum: sumFloat64AVX512Stream, Prod: prodFloat64AVX512Stream, Max: maxFloat64AVX512Stream, Min: minFloat64AVX512Stream},
}

var avx2StreamLoops = [numDTypes][numOps]loop{
	Int8:    {Sum: sumInt8AVX2Stream, Max: maxInt8AVX2Stream, Min: minInt8AVX2Stream},
	Uint8:   {Sum: sumInt8AVX2Stream, Max: maxUint8AVX2Stream, Min: minUint8AVX2Stream},
	Int16:   {Sum: sumInt16AVX2Stream, Prod: prodInt16AVX2Stream, Max: maxInt16AVX2Stream, Min: minInt16AVX2Stream},
	Uint16:  {Sum: sumInt16AVX2Stream, Prod: prodInt16AVX2Stream, Max: maxUint16AVX2Stream, Min: minUint16AVX2Stream},
	Int32:   {Sum: sumInt32AVX2Stream, Prod: prodInt32AVX2Stream, Max: maxInt32AVX2Stream, Min: minInt32AVX2Stream},
	Uint32:  {Sum: sumInt32AVX2Stream, Prod: prodInt32AVX2Stream, Max: maxUint32AVX2Stream, Min: minUint32AVX2Stream},
	Int64:   {Sum: sumInt64AVX2Stream, Prod: prodInt64AVX2Stream, Max: maxInt64AVX2Stream, Min: minInt64AVX2Stream},
	Uint64:  {Sum: sumInt64AVX2Stream, Prod: prodInt64AVX2Stream, Max: maxUint64AVX2Stream, Min: minUint64AVX2Stream},
	Float32: {Sum: sumFloat32AVX2Stream, Prod: prodFloat32AVX2Stream, Max: maxFloat32AVX2Stream, Min: minFloat32AVX2Stream},
	Float64: {Sum: sumFloat64AVX2Stream, Prod: prodFloat64AVX2Stream, Max: maxFloat64AVX2Stream, Min: minFloat64AVX2Stream},
}

// archStreamLoop returns the streaming loop for (d, op) at level l and the
// alignment its stores need, or nil where there is none (stream.go).
func archStreamLoop(l isaLevel, d DType, op Op) (loop, int) {
	switch l {
	case levelAVX512:
		if !d.IsFloat() && d.Size() <= 2 && !cpu.X86.HasAVX512BW {
			return archStreamLoop(levelAVX2, d, op)
		}
		if f := avx512StreamLoops[d][op]; f != nil {
			return f, 64
		}
	case levelAVX2:
		if f := avx2StreamLoops[d][op]; f != nil {
			return avx2Tail(f, genericLoops[d][op], avx2Block(d, op)), 32
		}
	}
	return nil, 0
}

// avx2Block is how many bytes of each operand one AVX2 vector of (d, op)
// covers: 32, or 16 when the elements are widened first (16-bit floats to
// float32 lanes, bytes to words for Prod).
func avx2Block(d DType, op Op) int {
	if d == Float16 || d == BFloat16 || d.Size() == 1 && op == Prod {
		return 16
	}
	return 32
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

// archDivider returns the assembly Divide body for d at level l, or nil.
func archDivider(l isaLevel, d DType) divider {
	switch l {
	case levelAVX512:
		switch d {
		case Float64:
			return func(buf []byte, n int) { divideFloat64AVX512(buf, float64(n)) }
		case Float32:
			return func(buf []byte, n int) { divideFloat32AVX512(buf, float32(n)) }
		case Float16:
			return func(buf []byte, n int) { divideFloat16AVX512(buf, float32(n)) }
		case BFloat16:
			return func(buf []byte, n int) { divideBFloat16AVX512(buf, float32(n)) }
		}
	case levelAVX2:
		var body divider
		switch d {
		case Float64:
			body = func(buf []byte, n int) { divideFloat64AVX2(buf, float64(n)) }
		case Float32:
			body = func(buf []byte, n int) { divideFloat32AVX2(buf, float32(n)) }
		case Float16:
			if !cpu.X86.HasF16C {
				return nil
			}
			body = func(buf []byte, n int) { divideFloat16AVX2(buf, float32(n)) }
		case BFloat16:
			body = func(buf []byte, n int) { divideBFloat16AVX2(buf, float32(n)) }
		default:
			return nil
		}
		// The AVX2 loop stops at the last whole vector.
		block, tail := avx2Block(d, Avg), genericDividers[d]
		return func(buf []byte, n int) {
			body(buf, n)
			if m := len(buf) &^ (block - 1); m < len(buf) {
				tail(buf[m:], n)
			}
		}
	}
	return nil
}

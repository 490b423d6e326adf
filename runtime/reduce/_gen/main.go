// Command _gen writes the amd64 assembly of package reduce with avo.
//
// Run it through go generate in the parent directory (see gen.go there); it
// lives in its own module so that the main module does not depend on avo.
//
// Every reduction kernel has the Go signature func(dst, a, b []byte) and
// computes dst[i] = a[i] op b[i] over len(dst)/size elements; the Divide
// kernels are func(buf []byte, n float32 or float64) and divide in place. The caller (the Go side
// of package reduce) has checked that the three slices have the same length,
// a multiple of the element size, and that dst aliases a or b exactly or not
// at all: each vector is loaded completely before its result is stored, so
// exact aliasing is safe and partial overlap is not supported.
//
// Loop shape: an unrolled loop over `unroll` vectors, then single vectors,
// then (AVX-512 only) one masked vector for the remaining elements. The AVX2
// kernels stop after the single vectors and leave the last
// len(dst) % memBytes bytes to the generic Go loop: AVX2 has no masked load
// for 8- and 16-bit elements, and a scalar tail in assembly would only
// duplicate the Go code.
//
// Stores are ordinary: the executor reduces into segments it sends next, so
// the result should stay in cache. The Stream twins of the kernels whose
// stores are plain vector moves (not the widened 8-bit Prod, not the 16-bit
// floats, which narrow as they store) store the whole vectors with
// VMOVNTDQ instead, around the cache and without reading the destination's
// lines first, and end with SFENCE so that those stores are visible before
// whatever the caller publishes next: for destinations far larger than
// the cache (package reduce's StreamKernel). Their dst must be aligned to
// the vector width; the Go side reduces the head up to that with the
// ordinary kernel.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// isa is one instruction-set level.
type isa struct {
	name     string
	vecBytes int  // register width in bytes
	evex     bool // AVX-512: zmm registers, opmasks, masked tails
}

var (
	avx2   = isa{"AVX2", 32, false}
	avx512 = isa{"AVX512", 64, true}
)

func (s isa) vec() VecVirtual {
	if s.evex {
		return ZMM()
	}
	return YMM()
}

// kind is the element type as the assembly sees it: Sum and Prod do not
// care about signedness, so Int32 and Int64 serve the unsigned types too.
type kind struct {
	name    string // Go-side type name used in function names
	size    int    // bytes per element in memory
	shift   int    // log2(size)
	widened bool   // bytes computed in 16-bit lanes (there is no 8-bit multiply)
}

var (
	int8K     = kind{"Int8", 1, 0, false}
	uint8K    = kind{"Uint8", 1, 0, false}
	int16K    = kind{"Int16", 2, 1, false}
	uint16K   = kind{"Uint16", 2, 1, false}
	float32K  = kind{"Float32", 4, 2, false}
	float64K  = kind{"Float64", 8, 3, false}
	int32K    = kind{"Int32", 4, 2, false}
	uint32K   = kind{"Uint32", 4, 2, false}
	int64K    = kind{"Int64", 8, 3, false}
	uint64K   = kind{"Uint64", 8, 3, false}
	float16K  = kind{"Float16", 2, 1, false}
	bfloat16K = kind{"BFloat16", 2, 1, false}
	// int8ProdK serves Prod of both 8-bit types: zero-extend to words,
	// VPMULLW, keep the low byte of each product.
	int8ProdK = kind{"Int8", 1, 0, true}
)

// half reports whether k is a 16-bit float type computed in float32.
func (k kind) half() bool { return k == float16K || k == bfloat16K }

// wide reports whether the computation lanes are 64-bit.
func (k kind) wide() bool { return k.size == 8 }

// float reports whether the computation is floating point.
func (k kind) float() bool {
	return k == float32K || k == float64K || k.half()
}

// memBytes is how many bytes of each operand one vector covers.
func memBytes(s isa, k kind) int {
	if k.half() || k.widened {
		return s.vecBytes / 2 // 16-bit elements widened to 32-bit lanes
	}
	return s.vecBytes
}

// consts holds the broadcast constants a kernel needs, set up once before
// its loops.
type consts struct {
	one, bias, quiet VecVirtual // bfloat16 rounding: 1, 0x7fff, 0x40
	sign             VecVirtual // AVX2 uint64 compare: 1<<63
	lowBytes         VecVirtual // AVX2 8-bit Prod: 0x00ff in every word
}

func broadcast32(s isa, v uint32) VecVirtual {
	r := GP32()
	MOVL(U32(v), r)
	z := s.vec()
	if s.evex {
		VPBROADCASTD(r, z)
		return z
	}
	x := XMM()
	MOVD(r, x)
	VPBROADCASTD(x, z)
	return z
}

func broadcast64(s isa, v uint64) VecVirtual {
	r := GP64()
	MOVQ(U64(v), r)
	x := XMM()
	MOVQ(r, x)
	z := s.vec()
	VPBROADCASTQ(x, z)
	return z
}

// load reads one vector of operand m into computation lanes; k, when not
// nil, masks the load (zeroing the lanes it leaves out).
func load(s isa, k kind, m Mem, mask Op) VecVirtual {
	v := s.vec()
	switch {
	case k.widened:
		if mask != nil {
			VPMOVZXBW_Z(m, mask, v)
		} else {
			VPMOVZXBW(m, v)
		}
	case k == float16K:
		if mask != nil {
			VCVTPH2PS_Z(m, mask, v)
		} else {
			VCVTPH2PS(m, v)
		}
	case k == bfloat16K:
		if mask != nil {
			VPMOVZXWD_Z(m, mask, v)
		} else {
			VPMOVZXWD(m, v)
		}
		VPSLLD(U8(16), v, v)
	case !s.evex:
		VMOVDQU(m, v)
	case mask == nil:
		VMOVDQU64(m, v)
	case k.size == 1:
		VMOVDQU8_Z(m, mask, v) // AVX512BW
	case k.size == 2:
		VMOVDQU16_Z(m, mask, v)
	case k.wide():
		VMOVDQU64_Z(m, mask, v)
	default:
		VMOVDQU32_Z(m, mask, v)
	}
	return v
}

// streams reports whether k has Stream kernels: its whole vectors are
// stored with a plain move.
func (k kind) streams() bool { return !k.widened && !k.half() }

// store writes the computation lanes v to operand m, narrowing 16-bit
// floats with round to nearest even; stream stores whole vectors around
// the cache (m must be aligned to the vector width).
func store(s isa, k kind, c consts, v VecVirtual, m Mem, mask Op, stream bool) {
	switch {
	case stream && mask == nil && k.streams():
		VMOVNTDQ(v, m)
	case k.widened && s.evex && mask != nil:
		VPMOVWB(v, mask, m)
	case k.widened && s.evex:
		VPMOVWB(v, m)
	case k.widened:
		// Clear the high byte of each word so that the unsigned
		// saturation of VPACKUSWB keeps the low byte as it is.
		t := YMM()
		VPAND(c.lowBytes, v, t)
		hi := XMM()
		VEXTRACTI128(U8(1), t, hi)
		out := XMM()
		VPACKUSWB(hi, t.AsX(), out)
		VMOVDQU(out, m)
	case k == float16K:
		// Immediate 0: round to nearest even regardless of MXCSR.
		if mask != nil {
			VCVTPS2PH(U8(0), v, mask, m)
		} else {
			VCVTPS2PH(U8(0), v, m)
		}
	case k == bfloat16K:
		r := roundBF16(s, c, v)
		switch {
		case s.evex && mask != nil:
			VPMOVDW(r, mask, m)
		case s.evex:
			VPMOVDW(r, m)
		default:
			// Pack the eight 32-bit lanes (each below 1<<16, so the
			// unsigned saturation never triggers) into eight words.
			hi := XMM()
			VEXTRACTI128(U8(1), r, hi)
			out := XMM()
			VPACKUSDW(hi, r.AsX(), out)
			VMOVDQU(out, m)
		}
	case !s.evex:
		VMOVDQU(v, m)
	case mask == nil:
		VMOVDQU64(v, m)
	case k.size == 1:
		VMOVDQU8(v, mask, m)
	case k.size == 2:
		VMOVDQU16(v, mask, m)
	case k.wide():
		VMOVDQU64(v, mask, m)
	default:
		VMOVDQU32(v, mask, m)
	}
}

// roundBF16 turns float32 lanes into bfloat16 values in the low 16 bits of
// each lane: (x + 0x7fff + (x>>16 & 1)) >> 16, and for NaN x>>16 | 0x40 (a
// quiet NaN; the add could carry a NaN into Inf). Same as
// BFloat16FromFloat32.
func roundBF16(s isa, c consts, x VecVirtual) VecVirtual {
	lsb := s.vec()
	VPSRLD(U8(16), x, lsb)
	r := s.vec()
	q := s.vec()
	VPSRLD(U8(16), x, q)
	if s.evex {
		VPANDD(c.one, lsb, lsb)
		VPADDD(c.bias, x, r)
		VPADDD(lsb, r, r)
		VPSRLD(U8(16), r, r)
		nan := K()
		VCMPPS(U8(3), x, x, nan) // UNORD_Q
		VPORD(c.quiet, q, nan, r)
		return r
	}
	VPAND(c.one, lsb, lsb)
	VPADDD(c.bias, x, r)
	VPADDD(lsb, r, r)
	VPSRLD(U8(16), r, r)
	nan := s.vec()
	VCMPPS(U8(3), x, x, nan)
	VPOR(c.quiet, q, q)
	VBLENDVPS(nan, q, r, r)
	return r
}

type op int

const (
	sum op = iota
	prod
	maxOp
	minOp
)

var opNames = map[op]string{sum: "sum", prod: "prod", maxOp: "max", minOp: "min"}

// compute returns x op y; it may overwrite x.
func compute(s isa, k kind, o op, c consts, x, y VecVirtual) VecVirtual {
	if k.float() {
		return computeFloat(s, k, o, x, y)
	}
	switch o {
	case sum:
		map[int]func(...Op){1: VPADDB, 2: VPADDW, 4: VPADDD, 8: VPADDQ}[k.size](y, x, x)
		return x
	case prod:
		if k.widened {
			VPMULLW(y, x, x)
			return x
		}
		if k.wide() && !s.evex {
			return mulInt64AVX2(x, y)
		}
		map[int]func(...Op){2: VPMULLW, 4: VPMULLD, 8: VPMULLQ}[k.size](y, x, x)
		return x
	}
	if k.wide() && !s.evex {
		return maxMinInt64AVX2(k, o, c, x, y)
	}
	type key struct {
		k kind
		o op
	}
	ins := map[key]func(...Op){
		{int8K, maxOp}: VPMAXSB, {int8K, minOp}: VPMINSB,
		{uint8K, maxOp}: VPMAXUB, {uint8K, minOp}: VPMINUB,
		{int16K, maxOp}: VPMAXSW, {int16K, minOp}: VPMINSW,
		{uint16K, maxOp}: VPMAXUW, {uint16K, minOp}: VPMINUW,
		{int32K, maxOp}: VPMAXSD, {int32K, minOp}: VPMINSD,
		{uint32K, maxOp}: VPMAXUD, {uint32K, minOp}: VPMINUD,
		{int64K, maxOp}: VPMAXSQ, {int64K, minOp}: VPMINSQ,
		{uint64K, maxOp}: VPMAXUQ, {uint64K, minOp}: VPMINUQ,
	}[key{k, o}]
	ins(y, x, x)
	return x
}

// mulInt64AVX2 builds the low 64 bits of x*y from 32x32->64 multiplies,
// as AVX2 has no VPMULLQ: with x = xh<<32 + xl and y likewise,
// x*y mod 2^64 = xl*yl + (xl*yh + xh*yl)<<32.
func mulInt64AVX2(x, y VecVirtual) VecVirtual {
	lo := YMM()
	VPMULUDQ(y, x, lo) // xl*yl
	xh, yh := YMM(), YMM()
	VPSRLQ(U8(32), x, xh)
	VPSRLQ(U8(32), y, yh)
	VPMULUDQ(yh, x, yh) // xl*yh
	VPMULUDQ(y, xh, xh) // xh*yl
	VPADDQ(xh, yh, yh)
	VPSLLQ(U8(32), yh, yh)
	VPADDQ(yh, lo, lo)
	return lo
}

// maxMinInt64AVX2 builds 64-bit Max/Min from VPCMPGTQ and a blend; the
// unsigned variant flips the sign bits first so that the signed compare
// orders them as unsigned.
func maxMinInt64AVX2(k kind, o op, c consts, x, y VecVirtual) VecVirtual {
	gt := YMM()
	if k == uint64K {
		xs, ys := YMM(), YMM()
		VPXOR(c.sign, x, xs)
		VPXOR(c.sign, y, ys)
		VPCMPGTQ(ys, xs, gt) // gt = x > y
	} else {
		VPCMPGTQ(y, x, gt)
	}
	t := YMM()
	if o == maxOp {
		VBLENDVPD(gt, x, y, t) // gt ? x : y
	} else {
		VBLENDVPD(gt, y, x, t) // gt ? y : x
	}
	return t
}

// computeFloat implements Sum, Prod and the package's Max/Min rule: NaN in
// a wins, then NaN in b, then the larger (smaller), and for equal operands
// a AND b (a OR b) so that Max(-0, +0) = +0 and Min(-0, +0) = -0. VMAXPS(y,
// x) alone returns x > y ? x : y, which already yields b when b is NaN.
func computeFloat(s isa, k kind, o op, x, y VecVirtual) VecVirtual {
	pd := k == float64K
	pick := func(ps, pdf func(...Op)) func(...Op) {
		if pd {
			return pdf
		}
		return ps
	}
	switch o {
	case sum:
		pick(VADDPS, VADDPD)(y, x, x)
		return x
	case prod:
		pick(VMULPS, VMULPD)(y, x, x)
		return x
	}
	cmp := pick(VCMPPS, VCMPPD)
	t := s.vec()
	if o == maxOp {
		pick(VMAXPS, VMAXPD)(y, x, t)
	} else {
		pick(VMINPS, VMINPD)(y, x, t)
	}
	if s.evex {
		eq := K()
		cmp(U8(0), y, x, eq) // EQ_OQ
		switch {
		case o == maxOp && pd:
			VPANDQ(y, x, eq, t)
		case o == maxOp:
			VPANDD(y, x, eq, t)
		case pd:
			VPORQ(y, x, eq, t)
		default:
			VPORD(y, x, eq, t)
		}
		nan := K()
		cmp(U8(3), x, x, nan) // UNORD_Q: x is NaN
		pick(VMOVAPS, VMOVAPD)(x, nan, t)
		return t
	}
	eq := YMM()
	cmp(U8(0), y, x, eq)
	m := YMM()
	if o == maxOp {
		VPAND(y, x, m)
	} else {
		VPOR(y, x, m)
	}
	blend := VBLENDVPS
	if pd {
		blend = VBLENDVPD
	}
	blend(eq, m, t, t)
	nan := YMM()
	cmp(U8(3), x, x, nan)
	blend(nan, x, t, t)
	return t
}

// kernel writes the kernel of (k, o) at level s, or with stream its
// Stream twin.
func kernel(s isa, k kind, o op, stream bool) {
	name := fmt.Sprintf("%s%s%s", opNames[o], k.name, s.name)
	how := ""
	if stream {
		name += "Stream"
		how = fmt.Sprintf(", storing whole vectors around the cache (dst aligned to %d bytes)", s.vecBytes)
	}
	TEXT(name, NOSPLIT, "func(dst, a, b []byte)")
	if s.evex {
		Doc(fmt.Sprintf("%s computes dst[i] = a[i] %s b[i] over all %s elements with AVX-512%s.", name, opNames[o], k.name, how))
	} else {
		Doc(fmt.Sprintf("%s computes dst[i] = a[i] %s b[i] over the first len(dst) &^ %d bytes of %s elements with AVX2%s.", name, opNames[o], memBytes(s, k)-1, k.name, how))
	}
	d := Load(Param("dst").Base(), GP64())
	pa := Load(Param("a").Base(), GP64())
	pb := Load(Param("b").Base(), GP64())
	n := Load(Param("dst").Len(), GP64())
	c := setup(s, k)
	if k == uint64K && !s.evex {
		c.sign = broadcast64(s, 1<<63)
	}
	if k.widened && !s.evex {
		c.lowBytes = broadcast32(s, 0x00ff00ff)
	}
	unroll := 4
	if k == bfloat16K && !s.evex {
		unroll = 2 // three constants and the rounding temporaries: 16 ymm registers
	}
	loops(s, k, c, n, unroll, d, []Register{pa, pb}, stream, func(vs []VecVirtual) VecVirtual {
		return compute(s, k, o, c, vs[0], vs[1])
	})
}

// divide writes the kernel dividing every element of buf by n in place
// (the end of Avg): VDIVPS/VDIVPD, correctly rounded like the scalar Go
// division, with the 16-bit types widened to float32 and rounded once back.
func divide(s isa, k kind) {
	name := fmt.Sprintf("divide%s%s", k.name, s.name)
	scalar := "float32"
	if k == float64K {
		scalar = "float64"
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(buf []byte, n %s)", scalar))
	if s.evex {
		Doc(fmt.Sprintf("%s divides all %s elements of buf by n with AVX-512.", name, k.name))
	} else {
		Doc(fmt.Sprintf("%s divides the first len(buf) &^ %d bytes of %s elements by n with AVX2.", name, memBytes(s, k)-1, k.name))
	}
	p := Load(Param("buf").Base(), GP64())
	n := Load(Param("buf").Len(), GP64())
	c := setup(s, k)
	x := Load(Param("n"), XMM())
	div := s.vec()
	if k == float64K {
		VBROADCASTSD(x, div)
	} else {
		VBROADCASTSS(x, div)
	}
	unroll := 4
	if k == bfloat16K && !s.evex {
		unroll = 2
	}
	loops(s, k, c, n, unroll, p, []Register{p}, false, func(vs []VecVirtual) VecVirtual {
		if k == float64K {
			VDIVPD(div, vs[0], vs[0])
		} else {
			VDIVPS(div, vs[0], vs[0])
		}
		return vs[0]
	})
}

// setup broadcasts the constants the loads and stores of k need.
func setup(s isa, k kind) consts {
	var c consts
	if k == bfloat16K {
		c.one = broadcast32(s, 1)
		c.bias = broadcast32(s, 0x7fff)
		c.quiet = broadcast32(s, 0x40)
	}
	return c
}

// loops emits the unrolled, single-vector and (AVX-512) masked-tail loops
// over the byte count n: one vector is loaded through each of srcs, f
// combines them and the result is stored through dst (which may be one of
// srcs). All pointers advance together. With stream the whole vectors
// are stored around the cache, fenced at the end.
func loops(s isa, k kind, c consts, n Register, unroll int, dst Register, srcs []Register, stream bool, f func([]VecVirtual) VecVirtual) {
	vm := memBytes(s, k)
	blk := unroll * vm
	body := func(count int, mask Op) {
		in := make([][]VecVirtual, count)
		for u := range count {
			for _, p := range srcs {
				in[u] = append(in[u], load(s, k, Mem{Base: p, Disp: u * vm}, mask))
			}
		}
		for u := range count {
			store(s, k, c, f(in[u]), Mem{Base: dst, Disp: u * vm}, mask, stream)
		}
	}
	advance := func(by int) {
		ADDQ(U32(by), dst)
		for _, p := range srcs {
			if p != dst {
				ADDQ(U32(by), p)
			}
		}
		SUBQ(U32(by), n)
	}

	Label("unrolled")
	CMPQ(n, U32(blk))
	JB(LabelRef("single"))
	body(unroll, nil)
	advance(blk)
	JMP(LabelRef("unrolled"))

	Label("single")
	CMPQ(n, U32(vm))
	JB(LabelRef("tail"))
	body(1, nil)
	advance(vm)
	JMP(LabelRef("single"))

	Label("tail")
	if s.evex {
		TESTQ(n, n)
		JZ(LabelRef("done"))
		SHRQ(U8(k.shift), n) // elements left, fewer than one vector
		ones := GP64()
		MOVQ(I32(-1), ones)
		bits := GP64()
		BZHIQ(n, ones, bits)
		mask := K()
		switch lanes := vm / k.size; {
		case lanes == 64:
			KMOVQ(bits, mask) // AVX512BW
		case lanes == 32:
			KMOVD(bits.As32(), mask) // AVX512BW
		default:
			KMOVW(bits.As32(), mask)
		}
		body(1, mask)
	}
	Label("done")
	if stream {
		SFENCE()
	}
	VZEROUPPER()
	RET()
}

func main() {
	ConstraintExpr("!noasm,gc")
	all := []op{sum, prod, maxOp, minOp}
	minmax := []op{maxOp, minOp}
	for _, s := range []isa{avx512, avx2} {
		plan := []struct {
			k   kind
			ops []op
		}{
			{int8K, []op{sum, maxOp, minOp}},
			{int8ProdK, []op{prod}},
			{uint8K, minmax},
			{int16K, all},
			{uint16K, minmax},
			{float32K, all},
			{float64K, all},
			{int32K, all},
			{uint32K, minmax},
			{int64K, all},
			{uint64K, minmax},
			{float16K, all},
			{bfloat16K, all},
		}
		for _, p := range plan {
			for _, o := range p.ops {
				kernel(s, p.k, o, false)
				if p.k.streams() {
					kernel(s, p.k, o, true)
				}
			}
		}
		for _, k := range []kind{float32K, float64K, float16K, bfloat16K} {
			divide(s, k)
		}
	}
	Generate()
}

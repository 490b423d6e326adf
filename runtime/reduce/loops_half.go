package reduce

// Float16 and BFloat16 loops: each operation widens both operands to
// float32 (exactly), computes in float32 and rounds the result once back to
// 16 bits, as the assembly does with VCVTPH2PS/VCVTPS2PH and shifts. One
// loop per format and operator: choosing either per element, or widening
// a block into float32 scratch for the typed loops, measured slower
// (docs/measurements.md#misaligned-buffers-go-through-aligned-copies).

func sumF16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, Float16FromFloat32(addFloat(Float16ToFloat32(ld16(a)), Float16ToFloat32(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func prodF16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, Float16FromFloat32(mulFloat(Float16ToFloat32(ld16(a)), Float16ToFloat32(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func maxF16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, Float16FromFloat32(maxFloat(Float16ToFloat32(ld16(a)), Float16ToFloat32(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func minF16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, Float16FromFloat32(minFloat(Float16ToFloat32(ld16(a)), Float16ToFloat32(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func sumBF16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, BFloat16FromFloat32(addFloat(BFloat16ToFloat32(ld16(a)), BFloat16ToFloat32(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func prodBF16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, BFloat16FromFloat32(mulFloat(BFloat16ToFloat32(ld16(a)), BFloat16ToFloat32(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func maxBF16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, BFloat16FromFloat32(maxFloat(BFloat16ToFloat32(ld16(a)), BFloat16ToFloat32(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

func minBF16(dst, a, b []byte) {
	for len(dst) >= 2 && len(a) >= 2 && len(b) >= 2 {
		st16(dst, BFloat16FromFloat32(minFloat(BFloat16ToFloat32(ld16(a)), BFloat16ToFloat32(ld16(b)))))
		dst, a, b = dst[2:], a[2:], b[2:]
	}
}

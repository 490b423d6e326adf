package reduce

// Generic Float16 and BFloat16 loops: each operation widens both operands to
// float32 (exactly), computes in float32 and rounds the result once back to
// 16 bits, as the assembly does with VCVTPH2PS/VCVTPS2PH and shifts.

func sumF16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, Float16FromFloat32(addF32(Float16ToFloat32(ld16(a, i)), Float16ToFloat32(ld16(b, i)))))
	}
}

func prodF16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, Float16FromFloat32(mulF32(Float16ToFloat32(ld16(a, i)), Float16ToFloat32(ld16(b, i)))))
	}
}

func maxF16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, Float16FromFloat32(fmax32(Float16ToFloat32(ld16(a, i)), Float16ToFloat32(ld16(b, i)))))
	}
}

func minF16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, Float16FromFloat32(fmin32(Float16ToFloat32(ld16(a, i)), Float16ToFloat32(ld16(b, i)))))
	}
}

func sumBF16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, BFloat16FromFloat32(addF32(BFloat16ToFloat32(ld16(a, i)), BFloat16ToFloat32(ld16(b, i)))))
	}
}

func prodBF16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, BFloat16FromFloat32(mulF32(BFloat16ToFloat32(ld16(a, i)), BFloat16ToFloat32(ld16(b, i)))))
	}
}

func maxBF16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, BFloat16FromFloat32(fmax32(BFloat16ToFloat32(ld16(a, i)), BFloat16ToFloat32(ld16(b, i)))))
	}
}

func minBF16(dst, a, b []byte) {
	for i := 0; i+2 <= len(dst); i += 2 {
		st16(dst, i, BFloat16FromFloat32(fmin32(BFloat16ToFloat32(ld16(a, i)), BFloat16ToFloat32(ld16(b, i)))))
	}
}

//go:build !noasm && gc

#include "textflag.h"

// On x86 every store is a release: a plain MOV, aligned (sync/atomic's
// types are), is atomic and is seen after every store before it.

// func Store32(w *atomic.Uint32, v uint32)
TEXT ·Store32(SB), NOSPLIT, $0-12
	MOVQ w+0(FP), AX
	MOVL v+8(FP), BX
	MOVL BX, (AX)
	RET

// func Store64(w *atomic.Uint64, v uint64)
TEXT ·Store64(SB), NOSPLIT, $0-16
	MOVQ w+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET

//go:build !noasm && gc

#include "textflag.h"

// On x86 every store is a release: a plain MOV, aligned (sync/atomic's
// types are), is atomic and is seen after every store before it.

// func ReleaseStore64(w *atomic.Uint64, v uint64)
TEXT ·ReleaseStore64(SB), NOSPLIT, $0-16
	MOVQ w+0(FP), AX
	MOVQ v+8(FP), BX
	MOVQ BX, (AX)
	RET

//go:build !noasm && gc

package cpu

import xcpu "golang.org/x/sys/cpu"

// hasRepMovsb says whether the CPU has enhanced REP MOVSB (copy.go).
var hasRepMovsb = xcpu.X86.HasERMS

// repMovsb copies n bytes from src to dst with REP MOVSB
// (copy_amd64.s); the ranges must not overlap.
//
//go:noescape
func repMovsb(dst, src *byte, n uintptr)

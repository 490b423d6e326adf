//go:build !noasm && gc

package memcopy

import "golang.org/x/sys/cpu"

// hasRepMovsb says whether the CPU has enhanced REP MOVSB (copy.go).
var hasRepMovsb = cpu.X86.HasERMS

// repMovsb copies n bytes from src to dst with REP MOVSB
// (copy_amd64.s); the ranges must not overlap.
//
//go:noescape
func repMovsb(dst, src *byte, n uintptr)

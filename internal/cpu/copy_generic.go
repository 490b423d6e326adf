//go:build !amd64 || noasm || !gc

package cpu

// Without assembly copyBytes is Go's copy (copy.go).
const hasRepMovsb = false

func repMovsb(dst, src *byte, n uintptr) { panic("cpu: repMovsb without assembly") }

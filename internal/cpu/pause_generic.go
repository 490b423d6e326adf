//go:build !amd64 || noasm || !gc

package cpu

// cpuPause is a no-op without assembly (pause.go).
func cpuPause() {}

//go:build !amd64 || noasm || !gc

package shm

// cpuPause is a no-op without assembly (pause.go).
func cpuPause() {}

//go:build !noasm && gc

package shm

// cpuPause executes PAUSE (pause_amd64.s).
func cpuPause()

//go:build !noasm && gc

package cpu

// cpuPause executes PAUSE (pause_amd64.s).
func cpuPause()

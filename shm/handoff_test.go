package shm

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMeasureHandoff: two threads pass a turn on one of this process's
// CPUs; the figure is positive and below the measurement's bound, and a
// CPU the process may not use, or no rounds, is an error.
func TestMeasureHandoff(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for c := 0; c < len(set)*64 && cpu < 0; c++ {
		if set.IsSet(c) {
			cpu = c
		}
	}
	h, err := MeasureHandoff(cpu, 5, 20)
	if err != nil {
		t.Fatal(err)
	}
	if h <= 0 || h >= time.Second/200 {
		t.Errorf("hand-off on CPU %d: %v, want above 0 and below a 200th of the second the measurement may take", cpu, h)
	}
	t.Logf("hand-off on CPU %d: %v", cpu, h)
	if _, err := MeasureHandoff(cpu, 0, 20); err == nil {
		t.Error("no batches accepted")
	}
	unused := -1
	for c := 0; c < len(set)*64-1 && unused < 0; c++ {
		if !set.IsSet(c) {
			unused = c
		}
	}
	if _, err := MeasureHandoff(unused, 5, 20); err == nil {
		t.Errorf("CPU %d, not this process's, accepted", unused)
	}
}

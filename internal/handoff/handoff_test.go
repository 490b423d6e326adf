package handoff

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMeasure: two threads pass a turn on one of this process's
// CPUs; the figure is positive and below the measurement's bound, and a
// CPU the process may not use, or no rounds, is an error.
func TestMeasure(t *testing.T) {
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
	h, err := Measure(cpu, 5, 20)
	if err != nil {
		t.Fatal(err)
	}
	if h <= 0 || h >= time.Second/200 {
		t.Errorf("hand-off on CPU %d: %v, want above 0 and below a 200th of the second the measurement may take", cpu, h)
	}
	t.Logf("hand-off on CPU %d: %v", cpu, h)
	// Every thread of the process is left with its binding: the Go
	// scheduler reuses them, and a rank started from one inherits it.
	for range 20 {
		if _, err := Measure(cpu, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	tasks, _ := filepath.Glob("/proc/self/task/*")
	for _, task := range tasks {
		tid, _ := strconv.Atoi(filepath.Base(task))
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); err != nil {
			continue // the thread ended meanwhile
		}
		if got != set {
			t.Errorf("thread %d left with CPUs %v, want the process's %v", tid, cpusOf(got), cpusOf(set))
		}
	}
	if _, err := Measure(cpu, 0, 20); err == nil {
		t.Error("no batches accepted")
	}
	unused := -1
	for c := 0; c < len(set)*64-1 && unused < 0; c++ {
		if !set.IsSet(c) {
			unused = c
		}
	}
	if _, err := Measure(unused, 5, 20); err == nil {
		t.Errorf("CPU %d, not this process's, accepted", unused)
	}
}

func cpusOf(set unix.CPUSet) []int {
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

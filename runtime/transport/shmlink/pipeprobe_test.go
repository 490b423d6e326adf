package shmlink

import (
	"strings"
	"testing"
	"time"
)

// TestProbePipes runs the host probe: both ways must read the bytes (the
// probe checks what arrived) and take some time, and Pays must follow the
// ratio against pipesWin.
func TestProbePipes(t *testing.T) {
	p, err := ProbePipes()
	if err != nil {
		t.Fatal(err)
	}
	if p.Bytes != probeBytes || p.Spliced <= 0 || p.ProcessReads <= 0 {
		t.Fatalf("probe %+v", p)
	}
	t.Logf("%v: pipes %v", p, p.Pays())
	if !strings.Contains(p.String(), "process_vm_readv") {
		t.Errorf("String() = %q", p)
	}
	for _, c := range []struct {
		spliced, read time.Duration
		pays          bool
	}{
		{10 * time.Microsecond, 17 * time.Microsecond, true},
		{10 * time.Microsecond, 12 * time.Microsecond, false},
		{10 * time.Microsecond, 5 * time.Microsecond, false},
		{0, 5 * time.Microsecond, false},
	} {
		if got := (PipeProbe{Spliced: c.spliced, ProcessReads: c.read}).Pays(); got != c.pays {
			t.Errorf("spliced %v, process_vm_readv %v: Pays() = %v, want %v", c.spliced, c.read, got, c.pays)
		}
	}
}

package shm

import "testing"

// TestInPlaceTimes: the probe times both copies and decides by the ratio
// it documents. It logs the figures: they say which kind of machine this is.
func TestInPlaceTimes(t *testing.T) {
	cp, rd := InPlaceTimes()
	if cp <= 0 || rd <= 0 {
		t.Fatalf("copy %v, process_vm_readv %v: both must have been timed", cp, rd)
	}
	if want := rd < inPlaceRatio*cp; InPlacePays() != want {
		t.Fatalf("InPlacePays() = %v with copy %v and read %v, want %v", InPlacePays(), cp, rd, want)
	}
	t.Logf("256 KiB: copy %v, process_vm_readv %v (%.2fx); in place pays: %v", cp, rd, float64(rd)/float64(cp), InPlacePays())
}

package shm

import (
	"os"
	goruntime "runtime"
	"testing"
)

// TestLazySegment: a lazy segment's pages fault in at their first touch
// until ReadAhead populates its page tables; an eager segment is
// populated from the start.
func TestLazySegment(t *testing.T) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	const size = 4 << 20
	page := os.Getpagesize()
	pages := int64(size / page)
	seg, err := Create(size, Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	b := seg.Bytes()
	if got := threadFaults(t, func() { writePages(b[:size/2]) }); got < pages/2/32 {
		t.Fatalf("lazy segment: %d faults for %d pages: populated already?", got, pages/2)
	}
	seg.ReadAhead()
	if got := threadFaults(t, func() { writePages(b[size/2:]) }); got > pages/256 {
		t.Errorf("after ReadAhead: %d faults for %d pages, want (almost) none", got, pages/2)
	}
	seg.Close()
	seg.ReadAhead() // after Close: nothing

	eager, err := Create(size, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	if got := threadFaults(t, func() { writePages(eager.Bytes()) }); got > pages/256 {
		t.Errorf("eager segment: %d faults for %d pages, want (almost) none", got, pages)
	}
}

package shm

import "testing"

// TestLazySegment: a lazy segment reads nothing ahead until asked; once
// ReadAhead or Prefault ran, every page has been read.
func TestLazySegment(t *testing.T) {
	const size = 1 << 20
	seg, err := Create(size, Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	if !seg.prefault.lazy || seg.prefault.next.Load() != 0 {
		t.Fatalf("lazy segment: lazy %v, read ahead to %d", seg.prefault.lazy, seg.prefault.next.Load())
	}
	b := seg.Bytes()
	b[size-1] = 7 // faults in at first touch
	if b[size-1] != 7 {
		t.Fatal("a lazy segment does not hold a write")
	}
	seg.ReadAhead()
	if seg.prefault.lazy {
		t.Fatal("ReadAhead left the segment lazy")
	}
	seg.Prefault()
	if n := seg.prefault.next.Load(); n != int64(len(b)) {
		t.Fatalf("after Prefault, read to %d of %d", n, len(b))
	}

	eager, err := Create(size, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	if eager.prefault.lazy {
		t.Fatal("a segment created without Lazy is lazy")
	}
	lazy, err := Create(size, Options{Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	lazy.Prefault() // reads it all in the caller
	if n := lazy.prefault.next.Load(); n != int64(size) {
		t.Fatalf("Prefault of a lazy segment read to %d of %d", n, size)
	}
	lazy.Close()
	lazy.ReadAhead() // after Close: nothing
}

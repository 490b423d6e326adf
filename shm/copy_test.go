package shm

import (
	"bytes"
	"testing"
)

// TestCopyBytes holds copyBytes to copy over lengths on both sides of
// repMovsbMin and misaligned starts, with bytes around the destination
// that must stay untouched.
func TestCopyBytes(t *testing.T) {
	src := pattern(1<<20+64, 7)
	for _, n := range []int{0, 1, 7, 63, 4095, repMovsbMin, repMovsbMin + 1, 65536 + 3, 1 << 20} {
		for _, off := range [][2]int{{0, 0}, {1, 0}, {0, 3}, {5, 13}, {8, 24}} {
			so, do := off[0], off[1]
			dst := bytes.Repeat([]byte{0xee}, n+do+32)
			got := copyBytes(dst[do:do+n], src[so:so+n+9]) // src longer: copies len(dst)
			if got != n {
				t.Fatalf("n %d, offsets %v: copied %d", n, off, got)
			}
			if !bytes.Equal(dst[do:do+n], src[so:so+n]) {
				t.Fatalf("n %d, offsets %v: wrong bytes", n, off)
			}
			for i, b := range append(dst[:do:do], dst[do+n:]...) {
				if b != 0xee {
					t.Fatalf("n %d, offsets %v: byte %d outside the destination written", n, off, i)
				}
			}
		}
	}
	if n := copyBytes(make([]byte, 10), src[:5]); n != 5 {
		t.Fatalf("a shorter source: copied %d, want 5", n)
	}
	t.Logf("REP MOVSB in use: %v", hasRepMovsb)
}

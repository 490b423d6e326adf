package cpu

import (
	"sync/atomic"
	"testing"
)

// TestReleaseStore64: the store lands, whole, in the word it is given, and not
// beside it. (Its ordering is the hardware's, x86's store order, which no
// test here could catch being wrong: the fallback elsewhere is
// sync/atomic's.)
func TestReleaseStore64(t *testing.T) {
	var words struct {
		before uint64
		w      atomic.Uint64
		after  uint64
	}
	ReleaseStore64(&words.w, 0x0102030405060708)
	if got := words.w.Load(); got != 0x0102030405060708 {
		t.Fatalf("stored %#x", got)
	}
	if words.before != 0 || words.after != 0 {
		t.Fatal("the store wrote beside its word")
	}
}

package release

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestStores: the stores land, whole, in the words they are given, and not
// beside them.
func TestStores(t *testing.T) {
	var words struct {
		before uint64
		w64    atomic.Uint64
		w32    atomic.Uint32
		after  uint32
	}
	Store64(&words.w64, 0x0102030405060708)
	Store32(&words.w32, 0x0a0b0c0d)
	if words.w64.Load() != 0x0102030405060708 || words.w32.Load() != 0x0a0b0c0d {
		t.Fatalf("stored %#x and %#x", words.w64.Load(), words.w32.Load())
	}
	if words.before != 0 || words.after != 0 {
		t.Fatal("a store wrote beside its word")
	}
}

// TestPublish: a reader that loads the counter with Load sees every write
// made before the Store64 that set it (run with -race, and on x86 without
// it: the hardware's store order is what the package relies on).
func TestPublish(t *testing.T) {
	const n = 200000
	data := make([]atomic.Uint64, 64)
	var seq atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(1); i <= n; i++ {
			data[i%64].Store(i)
			Store64(&seq, i)
		}
	}()
	for {
		s := seq.Load()
		if s > 0 && data[s%64].Load() < s {
			t.Fatalf("seq %d seen before its write", s)
		}
		if s == n {
			break
		}
	}
	wg.Wait()
}

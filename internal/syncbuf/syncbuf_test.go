package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestBuffer: writes from many goroutines all land, whole, while another
// reads; Take empties the buffer.
func TestBuffer(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.Take(), "line\n"); got != 800 {
		t.Fatalf("%d lines, want 800", got)
	}
	if s := b.String(); s != "" {
		t.Fatalf("after Take: %q, want empty", s)
	}
}

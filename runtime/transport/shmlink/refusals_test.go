package shmlink

import (
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
)

var countRE = regexp.MustCompile(`shmlink: refused (\d+) more connections in the last`)

// counted sums the counts of the report lines in logs.
func counted(logs string) int {
	n := 0
	for _, m := range countRE.FindAllStringSubmatch(logs, -1) {
		c, _ := strconv.Atoi(m[1])
		n += c
	}
	return n
}

// TestRefusalsRateLimited: a hundred strangers of this user speaking
// garbage cost the log refusedBurst lines in full and a count, which adds
// up to every one of them, where each used to get a line of its own.
func TestRefusalsRateLimited(t *testing.T) {
	logs := &syncbuf.Buffer{}
	ln, err := Listen(newJobID(), 0, newKey(t), slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const strangers = 100
	for range strangers {
		c, err := net.Dial("unix", ln.Addr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(strings.Repeat("GET / HTTP/1.0\r\n", 8)))
		c.Close()
	}
	// Close ends the set-ups still in progress without a word: wait for
	// every stranger's to end first.
	for deadline := time.Now().Add(20 * time.Second); ln.dropped.Load()+ln.evicted.Load() < strangers; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d strangers dropped and %d evicted, want %d in all", ln.dropped.Load(), ln.evicted.Load(), strangers)
		}
	}
	ln.Close()
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n > refusedBurst+2 {
		t.Errorf("%d warnings for %d strangers, want at most %d:\n%s", n, strangers, refusedBurst+2, out)
	}
	// In full: a stranger's garbage, or its eviction when the strangers
	// came faster than their handshakes failed.
	if n := strings.Count(out, "not an hcclrun handshake") + strings.Count(out, "evicted the oldest set-up"); n != refusedBurst {
		t.Errorf("%d strangers logged in full, want %d:\n%s", n, refusedBurst, out)
	}
	if n := counted(out); n != strangers-refusedBurst {
		t.Errorf("counted %d strangers, want %d:\n%s", n, strangers-refusedBurst, out)
	}
}

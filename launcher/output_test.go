package launcher

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
)

// TestLineWriter feeds the relay chunks that cut lines anywhere and checks
// what reaches the destination, write by write.
func TestLineWriter(t *testing.T) {
	tests := []struct {
		name   string
		tagged bool
		chunks []string
		writes []string // what dst receives, one entry per Write, Flush included
	}{
		{"whole lines", false, []string{"a\nb\n"}, []string{"a\nb\n"}},
		{"split line", false, []string{"he", "llo\nwor", "ld\n"}, []string{"hello\n", "world\n"}},
		{"tail flushed raw", false, []string{"x\ny"}, []string{"x\n", "y"}},
		{"tagged batch", true, []string{"a\nb\nc"}, []string{"[1,3]<stdout>:a\n[1,3]<stdout>:b\n", "[1,3]<stdout>:c\n"}},
		{"tagged split", true, []string{"ab", "", "c\n"}, []string{"[1,3]<stdout>:abc\n"}},
		{"empty lines", true, []string{"\n\n"}, []string{"[1,3]<stdout>:\n[1,3]<stdout>:\n"}},
		{"nothing", true, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			dst := writeFunc(func(p []byte) { got = append(got, string(p)) })
			w := (&outputMux{tagged: tt.tagged, jobNum: 1}).writer(dst, 3, "stdout", false)
			for _, c := range tt.chunks {
				if n, err := w.Write([]byte(c)); n != len(c) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tt.writes) {
				t.Fatalf("writes %q, want %q", got, tt.writes)
			}
		})
	}
}

// TestLineWriterLongLine: a line longer than maxLineBytes comes out in tagged
// pieces of that size, every piece terminated.
func TestLineWriterLongLine(t *testing.T) {
	var out bytes.Buffer
	w := (&outputMux{tagged: true, jobNum: 1}).writer(&out, 0, "stderr", false)
	line := strings.Repeat("z", 2*maxLineBytes+10)
	for i := 0; i < len(line); i += 1 << 16 {
		w.Write([]byte(line[i:min(i+1<<16, len(line))]))
	}
	w.Write([]byte("\n"))
	w.Flush()
	pieces := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(pieces) != 3 {
		t.Fatalf("%d pieces, want 3", len(pieces))
	}
	for i, p := range pieces {
		want := maxLineBytes
		if i == 2 {
			want = 10
		}
		if !strings.HasPrefix(p, "[1,0]<stderr>:") || len(p)-len("[1,0]<stderr>:") != want {
			t.Fatalf("piece %d: %.20q... of %d bytes", i, p, len(p))
		}
	}
}

// TestLineWriterPartialFlush: an untagged prompt of the interactive rank
// without a newline is forwarded after a short idle time; a tagged one waits
// for its line.
func TestLineWriterPartialFlush(t *testing.T) {
	for _, tagged := range []bool{false, true} {
		var out syncbuf.Buffer
		w := (&outputMux{tagged: tagged, jobNum: 1}).writer(&out, 0, "stdout", true)
		w.Write([]byte("done\nname? "))
		time.Sleep(partialFlushDelay + 300*time.Millisecond)
		want := "done\nname? "
		if tagged {
			want = "[1,0]<stdout>:done\n"
		}
		if got := out.String(); got != want {
			t.Fatalf("tagged=%v: after idle %q, want %q", tagged, got, want)
		}
		w.Write([]byte("bob\n"))
		w.Flush()
		want = "done\nname? bob\n"
		if tagged {
			want = "[1,0]<stdout>:done\n[1,0]<stdout>:name? bob\n"
		}
		if got := out.String(); got != want {
			t.Fatalf("tagged=%v: at the end %q, want %q", tagged, got, want)
		}
	}
}

type writeFunc func([]byte)

func (f writeFunc) Write(p []byte) (int, error) {
	f(append([]byte(nil), p...))
	return len(p), nil
}

// TestTagOutputAtomicity runs 4 ranks that print many short lines and lines
// far longer than a pipe buffer, in writes that ignore line boundaries, to
// one destination for stdout and stderr (as 2>&1 does). Every line must come
// out whole, tagged with its rank, and in the rank's order.
func TestTagOutputAtomicity(t *testing.T) {
	const (
		np               = 4
		shortN, shortLen = 4000, 150
		longN, longLen   = 12, 300_000 // > 64 KiB pipe buffer
	)
	for _, tagged := range []bool{true, false} {
		t.Run(fmt.Sprintf("tagged=%v", tagged), func(t *testing.T) {
			dir := t.TempDir()
			var out syncbuf.Buffer
			job := &Job{
				Program: rankProg, NP: np, TagOutput: tagged, Stdout: &out, Stderr: &out,
				Args: script(dir, "spam", strconv.Itoa(shortN), strconv.Itoa(shortLen), "spam", strconv.Itoa(longN), strconv.Itoa(longLen)),
			}
			res := runJob(t, job, 60*time.Second)
			noLeftovers(t, dir)
			if res.err != nil {
				t.Fatalf("Run: %v", res.err)
			}
			checkSpam(t, out.String(), np, tagged, []spamPart{{shortN, shortLen}, {longN, longLen}})
		})
	}
}

type spamPart struct{ n, size int }

// checkSpam parses the lines of rankprog's spam step and checks each one.
func checkSpam(t *testing.T, out string, np int, tagged bool, parts []spamPart) {
	t.Helper()
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("output does not end with a newline")
	}
	next := make([]int, np) // per rank: index of the next expected line overall
	var starts []int        // cumulative line counts at each part's start
	total := 0
	for _, p := range parts {
		starts = append(starts, total)
		total += p.n
	}
	for ln, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		body := line
		if tagged {
			var r int
			if _, err := fmt.Sscanf(line, "[1,%d]<stdout>:", &r); err != nil {
				t.Fatalf("line %d: bad tag: %.60q", ln, line)
			}
			tag := fmt.Sprintf("[1,%d]<stdout>:", r)
			if !strings.HasPrefix(line, tag) {
				t.Fatalf("line %d: bad tag: %.60q", ln, line)
			}
			body = line[len(tag):]
			if !strings.HasPrefix(body, fmt.Sprintf("rank %d ", r)) {
				t.Fatalf("line %d: tagged rank %d carries %.40q", ln, r, body)
			}
		}
		var r, i int
		if _, err := fmt.Sscanf(body, "rank %d line %d ", &r, &i); err != nil || r < 0 || r >= np {
			t.Fatalf("line %d: not a spam line (interleaved?): %.80q", ln, body)
		}
		part := 0
		for part+1 < len(parts) && next[r] >= starts[part+1] {
			part++
		}
		if i != next[r]-starts[part] {
			t.Fatalf("line %d: rank %d line %d, want line %d of part %d", ln, r, i, next[r]-starts[part], part)
		}
		head := fmt.Sprintf("rank %d line %d ", r, i)
		pad := string(rune('a' + i%26))
		if len(body) != parts[part].size-1 || strings.Trim(body[len(head):], pad) != "" {
			t.Fatalf("line %d: rank %d line %d damaged: %d bytes, want %d: %.80q", ln, r, i, len(body), parts[part].size-1, body)
		}
		next[r]++
	}
	for r, n := range next {
		if n != total {
			t.Fatalf("rank %d: %d lines, want %d", r, n, total)
		}
	}
}

package launcher

import (
	"errors"
	"regexp"
	"testing"
	"time"
)

// TestExitZeroOwingPeers: a rank that exits 0 without Close after joining,
// or without ever joining while the others did, fails the job at once,
// named, and the ranks waiting for it read the abort naming it; a rank
// that joins late, or a job in which no rank joins, is no failure.
// Without the check the waiting ranks sat in their barrier until its 20 s
// deadline.
func TestExitZeroOwingPeers(t *testing.T) {
	abortRead := regexp.MustCompile(`(?m)^(?:rankprog: )?rank (\d+): (?:barrier: )?control: job aborted by rank 1: rank 1 exited with code 0 without calling `)
	tests := []struct {
		name  string
		np    int
		steps []string
		what  string // the summary; "" for success
	}{
		{"joined, no Close", 3,
			[]string{"join", "onabort", "4", "ready", "DIR", "await", "DIR", "3", "exit@1", "0", "barrier", "b", "leave"},
			`^rank 1 \(pid \d+ on \S+\) exited with code 0 without calling Close; terminated 0 other ranks$`},
		{"never joined", 3,
			[]string{"exit@1", "0", "join", "onabort", "4", "barrier", "b", "leave"},
			`^rank 1 \(pid \d+ on \S+\) exited with code 0 without calling Init, which other ranks did; terminated 0 other ranks$`},
		{"never joined, the others late", 3,
			[]string{"exit@1", "0", "sleep", "1s", "join", "onabort", "4", "barrier", "b", "leave"},
			`^rank 1 \(pid \d+ on \S+\) exited with code 0 without calling Init, which other ranks did; terminated 0 other ranks$`},
		{"late joiner", 3, []string{"sleep@2", "1500ms", "join", "barrier", "b", "leave"}, ""},
		{"nobody joins", 4, []string{"echo", "hi"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			job := &Job{Program: rankProg, NP: tt.np, Grace: time.Second, AbortWait: 5 * time.Second, Args: script(dir, tt.steps...)}
			res := runJob(t, job, 30*time.Second)
			noLeftovers(t, dir)
			if tt.what == "" {
				if res.err != nil {
					t.Fatalf("Run: %v; stdout %q", res.err, res.stdout)
				}
				return
			}
			var re *RankError
			if !errors.As(res.err, &re) || ExitCode(res.err) != 1 || !regexp.MustCompile(tt.what).MatchString(re.Error()) {
				t.Fatalf("Run: %v (code %d), want %q and code 1", res.err, ExitCode(res.err), tt.what)
			}
			// Each waiting rank reads the abort in its barrier (stderr), in
			// its onabort step (stdout), or in both when the two race.
			out := res.stdout.String() + res.stderr.String()
			read := map[string]bool{}
			for _, m := range abortRead.FindAllStringSubmatch(out, -1) {
				read[m[1]] = true
			}
			if len(read) != 2 || !read["0"] || !read["2"] {
				t.Errorf("ranks %v read the abort naming rank 1, want 0 and 2:\n%s", read, out)
			}
			// The sleeps of the late case and the start-up come on top.
			if res.elapsed > 4*time.Second {
				t.Errorf("took %v, want the job down within a few seconds", res.elapsed)
			}
			t.Logf("%s in %v", re.Error(), res.elapsed.Round(time.Millisecond))
		})
	}
}

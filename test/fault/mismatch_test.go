package fault

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// summaryRE is hcclrun's one-line summary of a rank that exited non-zero;
// when another rank had aborted the job first, the summary says so
// ("after rank 2 aborted the job: <reason>").
var summaryRE = regexp.MustCompile(`^hcclrun: rank \d+ \(pid \d+ on \S+\) exited with code (\d+)(?: after rank \d+ aborted the job: .+)?; terminated \d+ other ranks?$`)

// TestMismatchedCalls: rank 2 calls another collective, count, dtype, op or
// root than the others (after three good AllReduces). Within a bounded time
// every rank fails: at least one with ErrMismatch showing both calls and
// both ranks, the rest with ErrMismatch or ErrAborted; no rank finishes
// silently; hcclrun exits 3 (the first rank out had ErrMismatch) or 4 (it
// read the abort). A rank whose own peers in the call all agreed with it
// may return from the call (runtime/callcheck.go says why) and then fail in
// its next one, whose ErrMismatch names rank 2's call.
func TestMismatchedCalls(t *testing.T) {
	for _, tc := range []struct {
		what  string
		calls []string // both calls, as the error shows them
	}{
		{"collective", []string{"AllGather(count=8, float32) #5", "AllReduce(count=8, float32, sum) #5"}},
		{"count", []string{"AllReduce(count=1001, float32, sum) #5", "AllReduce(count=1000, float32, sum) #5"}},
		{"dtype", []string{"AllReduce(count=256, int32, sum) #5", "AllReduce(count=256, float32, sum) #5"}},
		{"op", []string{"AllReduce(count=256, float32, max) #5", "AllReduce(count=256, float32, sum) #5"}},
		{"root", []string{"Broadcast(count=256, float32, root=2) #5", "Broadcast(count=256, float32, root=0) #5"}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			j := startJob(t, nil, nil, args(faultProg, "-mode", "mismatch", "-odd", "2", "-what", tc.what)...)
			rs := j.ranks(4, 30*time.Second)
			j.noteRunning(rs)
			readyLines, _ := j.waitLines(readyRE, 4, 60*time.Second)
			j.wait(20 * time.Second)
			j.checkClean(rs)
			ready := readyLines[len(readyLines)-1].at

			// "rank 2 called X but rank 1 called Y", either way round.
			both := regexp.MustCompile(`mismatched collective calls: rank (\d) called (.*) but rank (\d) called (.*)$`)
			errs := j.errors()
			shown := 0
			for r := range 4 {
				e, ok := errs[r]
				if !ok {
					t.Errorf("rank %d printed no error", r)
					continue
				}
				if d := e.at.Sub(ready); d > 5*time.Second {
					t.Errorf("rank %d failed %v after the ranks were ready", r, d)
				}
				switch e.class {
				case "mismatch":
					m := both.FindStringSubmatch(e.msg)
					if m == nil || (m[1] != "2") == (m[3] != "2") {
						t.Errorf("rank %d: %q does not name rank 2 and another rank", r, e.msg)
						continue
					}
					odd, others := tc.calls[0], tc.calls[1]
					next := regexp.MustCompile(` #6 but rank 2 called ` + regexp.QuoteMeta(odd) + `$`)
					switch {
					case strings.Contains(e.msg, odd) && strings.Contains(e.msg, others):
						shown++
					case r != 2 && next.MatchString(e.msg):
						// It returned from call #5 and failed in #6.
					default:
						t.Errorf("rank %d: %q does not show both %q and %q", r, e.msg, odd, others)
					}
				case "aborted":
				default:
					t.Errorf("rank %d: %s %q, want ErrMismatch or ErrAborted", r, e.class, e.msg)
				}
			}
			if shown == 0 {
				t.Errorf("no rank showed the mismatch")
			}
			if _, silent := j.matches(regexp.MustCompile(`^rank \d+ done`)); len(silent) > 0 {
				t.Errorf("a rank finished despite the mismatch:\n%s", j.output())
			}
			if m := summaryRE.FindStringSubmatch(j.summary()); m == nil || (j.code != 3 && j.code != 4) || m[1] != itoa(j.code) {
				t.Errorf("exit code %d, summary %q; want 3 or 4 and the first failed rank's exit", j.code, j.summary())
			}
			first := errs[firstFailed(errs)]
			t.Logf("hcclrun exited %d after %v: %s; first error (rank %d, %v after ready): %s", j.code, j.elapsed.Round(time.Millisecond),
				j.summary(), first.rank, first.at.Sub(ready).Round(time.Millisecond), first.msg)
		})
	}
}

// firstFailed is the rank whose error line came first.
func firstFailed(errs map[int]errorLine) int {
	best := -1
	for r, e := range errs {
		if best < 0 || e.at.Before(errs[best].at) {
			best = r
		}
	}
	return best
}

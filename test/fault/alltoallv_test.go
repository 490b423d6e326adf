package fault

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func itoa(n int) string { return strconv.Itoa(n) }

// TestAlltoAllVInvalid: rank 1 makes six invalid AlltoAllV calls (short
// counts, a negative count, ranges beyond either buffer, overlapping
// receive ranges, in place). Each fails at once on rank 1 with
// ErrInvalidArgument saying what is wrong, sends nothing (the others are
// waiting in the correct call meanwhile), and the communicator stays
// usable: the correct AlltoAllV that follows works on every rank and the
// job exits 0.
func TestAlltoAllVInvalid(t *testing.T) {
	j := startJob(t, nil, nil, args(faultProg, "-mode", "a2av-local", "-bad", "1")...)
	rs := j.ranks(4, 30*time.Second)
	j.ready(4, 60*time.Second)
	j.wait(20 * time.Second)
	j.checkClean(rs)
	want := map[string]string{
		"short sendCounts":                "len(sendCounts) = 3, want Size() = 4",
		"negative count":                  "sendCounts[2] = -1 is negative",
		"send range beyond the buffer":    "send range for rank 3 is [",
		"receive range beyond the buffer": "receive range for rank 3 is [",
		"overlapping receive ranges":      "receive ranges of ranks 0 [2:7] and 1 [3:9] overlap",
		"in place":                        "in-place AlltoAllV is not supported",
	}
	_, ms := j.matches(regexp.MustCompile(`^rank 1 invalid "([^"]+)": (.*)$`))
	for _, m := range ms {
		frag, ok := want[m[1]]
		if !ok || !strings.Contains(m[2], "hccl: AlltoAllV rank 1: invalid argument: ") || !strings.Contains(m[2], frag) {
			t.Errorf("%s: %q, want ErrInvalidArgument saying %q", m[1], m[2], frag)
		}
		delete(want, m[1])
		t.Logf("%s: %s", m[1], m[2])
	}
	for k := range want {
		t.Errorf("no error reported for %s", k)
	}
	_, done := j.matches(regexp.MustCompile(`^rank \d done alltoallv ok$`))
	if j.code != 0 || len(done) != 4 {
		t.Fatalf("exit code %d, %d ranks checked the correct AlltoAllV; want 0 and 4\noutput:\n%s", j.code, len(done), j.output())
	}
	t.Logf("job exited 0 in %v", j.elapsed.Round(time.Millisecond))
}

// TestAlltoAllVDisagree: rank 1 sends 9 elements to rank 2, which expects
// 8. Rank 2 gets ErrMismatch naming both ranks and the counts, every other
// rank ErrMismatch or ErrAborted (rank 1's own part may complete, then its
// next call fails); nothing is written outside any rank's receive ranges
// (guard elements around every block: every rank that ran the AlltoAllV
// finds them intact); hcclrun exits 3 or 4.
func TestAlltoAllVDisagree(t *testing.T) {
	j := startJob(t, nil, nil, args(faultProg, "-mode", "a2av-agree", "-bad", "1")...)
	rs := j.ranks(4, 30*time.Second)
	readyLines, _ := j.waitLines(readyRE, 4, 60*time.Second)
	j.wait(20 * time.Second)
	j.checkClean(rs)
	ready := readyLines[len(readyLines)-1].at

	errs := j.errors()
	if _, corrupt := j.matches(regexp.MustCompile(`^rank \d guard CORRUPT`)); len(corrupt) > 0 {
		t.Errorf("%d ranks found a guard overwritten\n%s", len(corrupt), j.output())
	}
	// Every rank checks its guards after the AlltoAllV, but for one that
	// the abort reached while it was still leaving the Barrier before it
	// (faultprog's main.go; seen in CI once in six runs): it never wrote.
	_, guards := j.matches(regexp.MustCompile(`^rank (\d) guard ok$`))
	checked := map[string]bool{}
	for _, m := range guards {
		checked[m[1]] = true
	}
	for r := range 4 {
		if !checked[itoa(r)] && !strings.HasPrefix(errs[r].msg, "hccl: Barrier") {
			t.Errorf("rank %d neither checked its guards nor failed before the AlltoAllV\n%s", r, j.output())
		}
	}
	if !checked["2"] {
		t.Errorf("rank 2, which received the extra element, did not check its guards\n%s", j.output())
	}
	want := "mismatched collective calls: rank 2 expects 8 elements from rank 1, but rank 1 sends a different count"
	if e := errs[2]; e.class != "mismatch" || !strings.Contains(e.msg, want) {
		t.Errorf("rank 2: %s %q, want ErrMismatch saying %q", e.class, e.msg, want)
	}
	for r := range 4 {
		e, ok := errs[r]
		if !ok {
			t.Errorf("rank %d printed no error", r)
			continue
		}
		if e.class != "mismatch" && e.class != "aborted" {
			t.Errorf("rank %d: %s %q", r, e.class, e.msg)
		}
		if d := e.at.Sub(ready); d > 5*time.Second {
			t.Errorf("rank %d failed %v after ready", r, d)
		}
	}
	if m := summaryRE.FindStringSubmatch(j.summary()); m == nil || (j.code != 3 && j.code != 4) || m[1] != itoa(j.code) {
		t.Errorf("exit code %d, summary %q; want 3 or 4", j.code, j.summary())
	}
	t.Logf("hcclrun exited %d after %v: %s; rank 2 (%v after ready): %s", j.code, j.elapsed.Round(time.Millisecond), j.summary(),
		errs[2].at.Sub(ready).Round(time.Millisecond), errs[2].msg)
}

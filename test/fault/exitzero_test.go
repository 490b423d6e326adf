package fault

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"
)

var exitRE = regexp.MustCompile(`^rank (\d+) exit at=(\d+)$`)

// TestRankExitsZeroEarly: one rank exits with code 0 while the others go
// on, as a program that forgets Close, or returns before Init, does.
//
//   - no-close: the rank exits right after Init. The control plane saw its
//     connection lost, not left. (On a crowded host no link to it is open
//     then, and no link can tell the others it is gone; on this test's 4
//     ranks Init's own first AllReduce has opened them, runtime/warmup.go.)
//   - no-init: the rank exits without calling Init; the others wait for it
//     there.
//
// Either way the job fails promptly: every other rank gets ErrAborted
// naming the rank within the bound of a killed rank (TestRankKilled: 2 s;
// the no-init case waits half a second more for news of its joining),
// hcclrun exits 1 with the summary naming it, and nothing is left. Before
// the launcher judged exits 0, the first case hung for ever and the second
// for HCCL_CONNECT_TIMEOUT.
func TestRankExitsZeroEarly(t *testing.T) {
	for _, tc := range []struct {
		mode, env string
		class     string        // of the survivors' errors
		what      string        // the summary's and the abort's words
		bound     time.Duration // from the early exit to a survivor's error
	}{
		{"no-close", "HCCL_SHM_DISABLE=0", "aborted", "exited with code 0 without calling Close", 2 * time.Second},
		{"no-close", "HCCL_SHM_DISABLE=1", "aborted", "exited with code 0 without calling Close", 2 * time.Second},
		{"no-init", "HCCL_SHM_DISABLE=0", "init", "exited with code 0 without calling Init, which other ranks did", 2500 * time.Millisecond},
	} {
		t.Run(tc.mode+"/"+tc.env, func(t *testing.T) {
			const early = 2
			// HCCL_CONNECT_TIMEOUT above the job's deadline: only the
			// launcher can end it in time.
			j := startJob(t, []string{tc.env, "HCCL_CONNECT_TIMEOUT=120"}, nil,
				args(faultProg, "-mode", tc.mode, "-odd", strconv.Itoa(early), "-for", "30s")...)
			rs := j.ranks(4, 30*time.Second)
			_, ms := j.waitLines(exitRE, 1, 30*time.Second)
			ns, _ := strconv.ParseInt(ms[0][2], 10, 64)
			exited := time.Unix(0, ns)
			j.wait(20 * time.Second)
			took := time.Since(exited)
			j.checkClean(rs)

			errs := j.errors()
			names := regexp.MustCompile(fmt.Sprintf(`job aborted( by rank %d)?: .*\brank %d %s`, early, early, regexp.QuoteMeta(tc.what)))
			for r := range 4 {
				if r == early {
					continue
				}
				e, ok := errs[r]
				if !ok {
					t.Errorf("rank %d printed no error", r)
					continue
				}
				d := e.at.Sub(exited)
				t.Logf("rank %d after %v: %s: %s", r, d.Round(time.Millisecond), e.class, e.msg)
				// A survivor whose Init had not returned yet when the
				// abort came (the init barrier's reply and the abort
				// race on its control connection) fails its Init with
				// the same abort: as good.
				class := e.class == tc.class || e.class == "init" && tc.class == "aborted"
				if !class || !names.MatchString(e.msg) {
					t.Errorf("rank %d: class %s: %q; want %s, the abort naming rank %d", r, e.class, e.msg, tc.class, early)
				}
				if d > tc.bound {
					t.Errorf("rank %d noticed after %v, want within %v", r, d, tc.bound)
				}
			}
			want := regexp.MustCompile(fmt.Sprintf(`^hcclrun: rank %d \(pid %d on \S+\) %s; terminated \d+ other ranks?$`, early, rs[early].pid, regexp.QuoteMeta(tc.what)))
			if j.code != 1 || !want.MatchString(j.summary()) {
				t.Errorf("exit code %d, summary %q; want 1 and %q", j.code, j.summary(), want)
			}
			t.Logf("hcclrun exited %d %v after the early exit: %s", j.code, took.Round(time.Millisecond), j.summary())
		})
	}
}

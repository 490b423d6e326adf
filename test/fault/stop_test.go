package fault

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// TestRankStopped: SIGSTOP a random rank in the middle of an AllReduce
// loop. It is alive (its process runs) but neither progresses nor sends
// heartbeats.
//
//   - With HCCL_EXEC_TIMEOUT=2 the survivors' AllReduce fails after about
//     2 s with ErrTimeout naming the call, its number and the stopped rank
//     (LOST, since it is silent; STUCK if its last heartbeat is recent).
//   - Without an exec timeout the control plane's lost-rank detection
//     must still end the job: the survivors get ErrAborted naming the lost
//     rank, and so does hcclrun's summary. HCCL_HEARTBEAT_TIMEOUT=3 (the
//     default is 10 s) bounds it: lost 3 s after its last heartbeat plus
//     the 0.5 s grace, and the bound would fail if hcclrun ignored it.
func TestRankStopped(t *testing.T) {
	for _, tc := range []struct {
		name        string
		env         []string
		execTimeout bool
		min, max    time.Duration // time from SIGSTOP to the survivors' errors
	}{
		{"exec timeout", []string{"HCCL_EXEC_TIMEOUT=2"}, true, 1500 * time.Millisecond, 4 * time.Second},
		{"no exec timeout", []string{"HCCL_HEARTBEAT_TIMEOUT=3"}, false, 2500 * time.Millisecond, 6 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := testSeed(t)
			rng := rand.New(rand.NewPCG(seed, 3))
			victim := rng.IntN(4)
			delay := time.Duration(100+rng.IntN(400)) * time.Millisecond
			t.Logf("victim rank %d, stopped %v into the AllReduce loop", victim, delay)

			j := startJob(t, tc.env, nil, args(faultProg, "-mode", "loop")...)
			rs := j.ranks(4, 30*time.Second)
			j.ready(4, 60*time.Second)
			j.noteRunning(rs)
			key := j.jobKey(rs[0])
			time.Sleep(delay)
			stopped := signal(t, rs[victim].pid, syscall.SIGSTOP)
			j.wait(30 * time.Second)
			exited := time.Since(stopped)
			gone := j.checkClean(rs)
			j.checkKeyHidden(key)

			errs := j.errors()
			timeouts, named := 0, 0
			for r := range 4 {
				if r == victim {
					continue
				}
				e, ok := errs[r]
				if !ok {
					t.Errorf("rank %d printed no error", r)
					continue
				}
				d := e.at.Sub(stopped)
				t.Logf("rank %d after %v: %s: %s", r, d.Round(time.Millisecond), e.class, e.msg)
				if d < tc.min || d > tc.max {
					t.Errorf("rank %d failed %v after SIGSTOP, want within [%v, %v]", r, d, tc.min, tc.max)
				}
				if tc.execTimeout {
					// Every survivor's error carries the timeout's words:
					// its own, or the first one's inside ErrAborted. The
					// call is the loop's AllReduce or, one call in 17,
					// its stop flag's (loop.go).
					call := regexp.MustCompile(`AllReduce\(count=\d+, (float32, sum|int32, max)\) #\d+ did not finish within HCCL_EXEC_TIMEOUT=2s: `)
					who := regexp.MustCompile(fmt.Sprintf(`HCCL_EXEC_TIMEOUT=2s: .*\brank %d (LOST|STUCK)\b`, victim))
					switch {
					case !call.MatchString(e.msg) || e.class != "timeout" && e.class != "aborted":
						t.Errorf("rank %d: %s %q, want a timeout naming the call", r, e.class, e.msg)
					case !who.MatchString(e.msg):
						// A rank whose status query lost the race with
						// the first timeout's abort waits for the abort
						// and reports it, in the first rank's words
						// (runtime/exectimeout.go).
						t.Errorf("rank %d's timeout does not name rank %d: %q", r, victim, e.msg)
					default:
						named++
					}
					if e.class == "timeout" {
						timeouts++
					}
				} else if want := fmt.Sprintf("rank %d lost", victim); e.class != "aborted" || !regexp.MustCompile(`job aborted: .*\b`+want).MatchString(e.msg) {
					t.Errorf("rank %d: %s %q, want ErrAborted saying %q", r, e.class, e.msg, want)
				}
			}
			if tc.execTimeout {
				if timeouts == 0 || named == 0 {
					t.Errorf("%d survivors reported ErrTimeout, %d named rank %d; want at least one of each", timeouts, named, victim)
				}
				// The first rank to exit is a survivor that timed out
				// (code 5) or read the abort (code 4).
				if re := regexp.MustCompile(`^hcclrun: rank \d+ \(pid \d+ on \S+\) exited with code [45](?: after rank \d+ aborted the job: .+)?; terminated \d+ other ranks?$`); (j.code != 5 && j.code != 4) || !re.MatchString(j.summary()) {
					t.Errorf("exit code %d, summary %q; want 5 (or 4) and a rank's exit", j.code, j.summary())
				}
			} else {
				re := regexp.MustCompile(fmt.Sprintf(`^hcclrun: rank %d \(pid %d on \S+\) lost its control connection while running; terminated \d+ other ranks?$`, victim, rs[victim].pid))
				if j.code != 1 || !re.MatchString(j.summary()) {
					t.Errorf("exit code %d, summary %q; want 1 and %q", j.code, j.summary(), re)
				}
			}
			if exited > 12*time.Second {
				t.Errorf("hcclrun exited %v after SIGSTOP", exited)
			}
			t.Logf("hcclrun exited %d after %v: %s (processes gone %v later)", j.code, exited.Round(time.Millisecond), j.summary(), gone.Round(time.Millisecond))
		})
	}
}

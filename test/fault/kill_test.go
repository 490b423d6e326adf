package fault

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// common are the launcher flags of the fault cases: --abort-wait lets the
// survivors print their error before SIGTERM, as a user would want to read
// it.
var common = []string{"-np", "4", "--abort-wait", "3s", "--grace", "2s"}

func args(extra ...string) []string { return append(append([]string(nil), common...), extra...) }

// TestRankKilled: SIGKILL a random rank in the middle of an AllReduce loop,
// and of a loop of graph replays, over shared memory and over TCP. Every
// survivor's collective fails within 2 s with ErrAborted naming the dead
// rank, hcclrun exits 137 with the summary naming it, and nothing is left.
func TestRankKilled(t *testing.T) {
	for _, tc := range []struct{ name, mode, env string }{
		{"shm", "loop", "HCCL_SHM_DISABLE=0"}, {"tcp", "loop", "HCCL_SHM_DISABLE=1"},
		{"graph/shm", "graph", "HCCL_SHM_DISABLE=0"}, {"graph/tcp", "graph", "HCCL_SHM_DISABLE=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := testSeed(t)
			rng := rand.New(rand.NewPCG(seed, 1))
			victim := rng.IntN(4)
			delay := time.Duration(100+rng.IntN(400)) * time.Millisecond
			t.Logf("victim rank %d, killed %v into the AllReduce loop", victim, delay)

			j := startJob(t, []string{tc.env}, nil, args(faultProg, "-mode", tc.mode)...)
			rs := j.ranks(4, 30*time.Second)
			j.ready(4, 60*time.Second)
			j.noteRunning(rs)
			time.Sleep(delay)
			killed := signal(t, rs[victim].pid, syscall.SIGKILL)
			j.wait(20 * time.Second)
			exited := time.Since(killed)
			gone := j.checkClean(rs)

			errs := j.errors()
			names := regexp.MustCompile(fmt.Sprintf(`job aborted: .*\brank %d\b`, victim))
			for r := range 4 {
				if r == victim {
					continue
				}
				e, ok := errs[r]
				switch {
				case !ok:
					t.Errorf("rank %d printed no error", r)
					continue
				case e.class != "aborted" || !names.MatchString(e.msg):
					t.Errorf("rank %d: class %s: %q; want ErrAborted naming rank %d", r, e.class, e.msg, victim)
				}
				if d := e.at.Sub(killed); d > 2*time.Second {
					t.Errorf("rank %d noticed after %v, want within 2s", r, d)
				}
				t.Logf("rank %d after %v: %s", r, e.at.Sub(killed).Round(time.Millisecond), e.msg)
			}
			want := regexp.MustCompile(fmt.Sprintf(`^hcclrun: rank %d \(pid %d on \S+\) killed by SIGKILL \(signal 9\); terminated \d+ other ranks?$`, victim, rs[victim].pid))
			if j.code != 137 || !want.MatchString(j.summary()) {
				t.Errorf("exit code %d, summary %q; want 137 and %q", j.code, j.summary(), want)
			}
			if exited > 5*time.Second {
				t.Errorf("hcclrun exited %v after the kill", exited)
			}
			t.Logf("hcclrun exited %d after %v: %s (processes gone %v later)", j.code, exited.Round(time.Millisecond), j.summary(), gone.Round(time.Millisecond))
		})
	}
}

// TestLauncherKilled: SIGKILL hcclrun itself while its ranks are in an
// AllReduce loop. No rank may survive it (they hold a parent-death
// signal), and nothing of the job is left.
func TestLauncherKilled(t *testing.T) {
	seed := testSeed(t)
	delay := time.Duration(100+rand.New(rand.NewPCG(seed, 2)).IntN(400)) * time.Millisecond
	j := startJob(t, nil, nil, args(faultProg, "-mode", "loop")...)
	rs := j.ranks(4, 30*time.Second)
	j.ready(4, 60*time.Second)
	j.noteRunning(rs)
	time.Sleep(delay)
	killed := signal(t, j.cmd.Process.Pid, syscall.SIGKILL)
	j.wait(10 * time.Second)
	if j.code != -1 {
		t.Errorf("hcclrun exit code %d, want killed", j.code)
	}
	gone := j.checkClean(rs)
	if d := time.Since(killed); d > 2*time.Second+gone {
		t.Errorf("took %v", d)
	}
	if gone > 2*time.Second {
		t.Errorf("ranks outlived hcclrun by %v", gone)
	}
	t.Logf("killed %v into the loop; every rank gone %v after hcclrun was reaped", delay, gone.Round(time.Millisecond))
}

package fault

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// envInt reads a positive count from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return v
}

// TestRankKilledInInit: SIGKILL a random rank while the job is still in
// Init, either while ranks are still joining (fewer start lines than ranks:
// no rank can be past Init) or while they open their links, creating
// their shared-memory segments (shortly after the last start line).
// hcclrun exits promptly with the killed rank's 137, its summary naming
// that rank, and nothing of the job is left: no process, no /dev/shm file
// named by one of its pids (a rank killed between creating a segment's
// file and unlinking it would leave one), no listening socket. Killed
// ranks on their way up are what a large job's teardown produces, hence
// many ranks on few cores: FAULTSUITE_KILLINIT_RANKS and
// FAULTSUITE_KILLINIT_ITERS raise the default 16 ranks and 3 jobs, e.g. to
// 64 and 20 by hand.
func TestRankKilledInInit(t *testing.T) {
	n := envInt(t, "FAULTSUITE_KILLINIT_RANKS", 16)
	iters := envInt(t, "FAULTSUITE_KILLINIT_ITERS", 3)
	const abortWait, grace = 3 * time.Second, 2 * time.Second
	// Deadlines grow with the job: start-up on two cores is slow at scale.
	startWait := 30*time.Second + time.Duration(n)*500*time.Millisecond
	prompt := abortWait + grace + 5*time.Second + time.Duration(n)*50*time.Millisecond
	rng := rand.New(rand.NewPCG(testSeed(t), 4))
	inInit := 0
	for i := range iters {
		// Even jobs: killed while ranks join, after 1 to n/2 start lines.
		// Odd jobs: killed up to 40 ms after the last one, while the
		// links open (the check below says whether it was still Init).
		joining := i%2 == 0
		after := n
		if joining {
			after = 1 + rng.IntN(max(n/2, 1))
		}
		delay := time.Duration(rng.IntN(40)) * time.Millisecond
		pick := rng.IntN(after)
		t.Run(fmt.Sprintf("job %d", i), func(t *testing.T) {
			j := startJob(t, nil, nil, "-np", strconv.Itoa(n), "--oversubscribe",
				"--abort-wait", abortWait.String(), "--grace", grace.String(), faultProg, "-mode", "loop")
			_, ms := j.waitLines(startRE, after, startWait)
			victim, _ := strconv.Atoi(ms[pick][1])
			pid, _ := strconv.Atoi(ms[pick][2])
			time.Sleep(delay)
			started, _ := j.matches(startRE)
			early, _ := j.matches(readyRE)
			killed := signal(t, pid, syscall.SIGKILL)
			t.Logf("%d ranks, victim rank %d (pid %d) killed %v after start line %d; %d start lines by then",
				n, victim, pid, delay, after, len(started))
			j.wait(startWait + prompt)
			exited := time.Since(killed)
			// Every rank that reached Init printed its start line before
			// it, and hcclrun relayed all output before it exited.
			rs := j.started(n)
			gone := j.checkClean(rs)

			want := regexp.MustCompile(fmt.Sprintf(`^hcclrun: rank %d \(pid %d on \S+\) killed by SIGKILL \(signal 9\); terminated \d+ other ranks?$`, victim, pid))
			if j.code != 137 || !want.MatchString(j.summary()) {
				t.Errorf("exit code %d, summary %q; want 137 and %q\n%s", j.code, j.summary(), want, tail(j.output(), 40))
			}
			if exited > prompt {
				t.Errorf("hcclrun exited %v after the kill, want within %v", exited.Round(time.Millisecond), prompt)
			}

			// Where the kill landed: a ready line means every rank was
			// past Init (a Barrier follows it); a survivor's Init error
			// means it was still in Init.
			ready, _ := j.matches(readyRE)
			classes := map[string]int{}
			for r, e := range j.errors() {
				if r != victim {
					classes[e.class]++
				}
			}
			switch {
			case len(early) > 0:
				t.Logf("%d ranks were past Init before the kill: not a kill in Init", len(early))
			case len(ready) > 0:
				t.Logf("%d ranks got past Init after the kill: the victim was in the Barrier", len(ready))
			case classes["init"] > 0:
				inInit++
			}
			if joining && (len(ready) > 0 || classes["init"] == 0) {
				t.Errorf("killed while ranks joined, yet %d ready lines and survivors' errors by class %v", len(ready), classes)
			}
			t.Logf("hcclrun exited %d %v after the kill (processes gone %v later): %s; survivors' errors by class %v",
				j.code, exited.Round(time.Millisecond), gone.Round(time.Millisecond), j.summary(), classes)
		})
	}
	if inInit == 0 && !t.Failed() {
		t.Errorf("none of %d kills landed in Init: the case proves nothing", iters)
	}
	t.Logf("%d of %d kills landed in Init", inInit, iters)
}

// started returns the ranks of every start line the job printed, by rank,
// those without one zero.
func (j *job) started(n int) []rank {
	_, ms := j.matches(startRE)
	rs := make([]rank, n)
	for _, m := range ms {
		r, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		if r >= 0 && r < n {
			rs[r] = rank{pid: pid, control: m[3], jobID: m[4]}
		}
	}
	return rs
}

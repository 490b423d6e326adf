package fault

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCtrlZ: SIGTSTP to hcclrun in the middle of an AllReduce loop, as a
// shell's Ctrl-Z sends it, stops the ranks and then hcclrun itself; after
// 2 s, SIGCONT (fg) resumes them all and the job completes, every result
// checked, with the default heartbeat timeout (10 s). Without job control
// hcclrun stopped alone and its ranks ran on, talking to a frozen control
// plane.
func TestCtrlZ(t *testing.T) {
	j := startJob(t, nil, nil, args(faultProg, "-mode", "loop", "-for", "3s")...)
	rs := j.ranks(4, 30*time.Second)
	j.ready(4, 60*time.Second)
	j.noteRunning(rs)
	time.Sleep(300 * time.Millisecond)
	pids := []int{j.cmd.Process.Pid}
	for _, r := range rs {
		pids = append(pids, r.pid)
	}
	signal(t, pids[0], syscall.SIGTSTP)
	if bad := stoppedBy(pids, time.Second); len(bad) > 0 {
		t.Errorf("not stopped 1 s after SIGTSTP (pid: state): %v", bad)
	}
	// Still stopped all along, sampled through the 2 s.
	for range 10 {
		time.Sleep(200 * time.Millisecond)
		if bad := stoppedBy(pids, 0); len(bad) > 0 {
			t.Errorf("running while the job is stopped (pid: state): %v", bad)
			break
		}
	}
	signal(t, pids[0], syscall.SIGCONT)
	j.wait(30 * time.Second)
	j.checkClean(rs)
	if j.code != 0 {
		t.Fatalf("hcclrun exited %d after SIGCONT:\n%s", j.code, tail(j.output(), 30))
	}
	if done, _ := j.matches(regexp.MustCompile(`^rank \d done iters=\d+$`)); len(done) != 4 {
		t.Errorf("%d ranks finished their loop, want 4:\n%s", len(done), tail(j.output(), 30))
	}
}

// stoppedBy waits up to d for every pid to be stopped (state T) and
// returns those that are not, with their state.
func stoppedBy(pids []int, d time.Duration) []string {
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		var bad []string
		for _, p := range pids {
			if st := procState(p); st != "T" {
				bad = append(bad, strconv.Itoa(p)+": "+st)
			}
		}
		if len(bad) == 0 || !time.Now().Before(end) {
			return bad
		}
	}
}

// procState is the state letter of /proc/PID/stat, "gone" when there is
// no such process.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone"
	}
	s := string(b) // the state follows the command's closing parenthesis
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+3 <= len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

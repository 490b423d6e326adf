package launcher

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procState is the state letter of /proc/pid/stat ("T" when stopped), ""
// when the process is gone.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The state follows the command's closing parenthesis.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+3 <= len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

// waitStates waits until every pid is in state want (T or not T).
func waitStates(pids []int, stopped bool, d time.Duration) (bad []int) {
	for end := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		bad = bad[:0]
		for _, p := range pids {
			if (procState(p) == "T") != stopped {
				bad = append(bad, p)
			}
		}
		if len(bad) == 0 || time.Now().After(end) {
			return bad
		}
	}
}

// TestSuspendResume: SIGTSTP through Job.Signals stops every rank, local
// and behind an agent, before Job.Suspend is called; SIGCONT resumes them,
// and the job ends well. Without job control the ranks ran on while the
// launcher was stopped.
func TestSuspendResume(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hosts func() []Host
	}{
		{"local", func() []Host { return nil }},
		{"agents", func() []Host { return []Host{agentHost(t, "node-a", 1), agentHost(t, "node-b", 2)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sigs := make(chan os.Signal, 2)
			suspended := make(chan []int, 1)
			job := &Job{
				Program: rankProg, NP: 3, Hosts: tc.hosts(), Grace: time.Second, Signals: sigs,
				Args: script(dir, "pid", "DIR", "ready", "DIR", "sleep", "1500ms"),
			}
			if job.Hosts != nil {
				job.NP = 0
			}
			job.Suspend = func() {
				// The launcher would stop here; the ranks must be stopped
				// already (an agent's take a frame to get there).
				suspended <- waitStates(readPids(t, dir, ".pid"), true, 2*time.Second)
			}
			go func() {
				waitFiles(t, dir, ".ready", 3, 20*time.Second)
				sigs <- syscall.SIGTSTP
				bad := <-suspended
				if len(bad) > 0 {
					t.Errorf("ranks %v not stopped when the launcher stops", bad)
				}
				// Stopped for longer than the ranks' sleep, which runs
				// out meanwhile: they could be done by now, had they not
				// been stopped.
				time.Sleep(2 * time.Second)
				if bad := waitStates(readPids(t, dir, ".pid"), true, 0); len(bad) > 0 {
					t.Errorf("ranks %v ran on while the job was stopped", bad)
				}
				sigs <- syscall.SIGCONT
				if bad := waitStates(readPids(t, dir, ".pid"), false, 2*time.Second); len(bad) > 0 {
					t.Errorf("ranks %v still stopped after SIGCONT", bad)
				}
			}()
			res := runJob(t, job, 30*time.Second)
			noLeftovers(t, dir)
			if res.err != nil {
				t.Fatalf("Run: %v", res.err)
			}
			if res.elapsed < 2*time.Second {
				t.Errorf("took %v: the job did not wait out the stop", res.elapsed)
			}
		})
	}
}

package launcher

import (
	"errors"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run ranks that talk to the job's real control plane
// (netio/control) with the address and key from their environment.

func TestControlPlaneServesRanks(t *testing.T) {
	dir := t.TempDir()
	job := &Job{Program: rankProg, NP: 4, Args: script(dir, "join", "barrier", "b1", "barrier", "b2", "leave", "echo", "passed")}
	res := runJob(t, job, 30*time.Second)
	noLeftovers(t, dir)
	if res.err != nil || strings.Count(res.stdout.String(), "passed\n") != 4 {
		t.Fatalf("Run: %v; stdout %q; stderr %q", res.err, res.stdout, res.stderr)
	}
}

// TestAbortBroadcast: when a rank fails, the others learn it from the
// control plane (here they exit on the abort, within AbortWait, before any
// SIGTERM), and the job reports the failed rank's code.
func TestAbortBroadcast(t *testing.T) {
	dir := t.TempDir()
	job := &Job{
		Program: rankProg, NP: 4, AbortWait: 5 * time.Second, Grace: time.Second,
		Args: script(dir, "join", "onabort", "0", "ready", "DIR", "await@2", "DIR", "4", "exit@2", "5", "sleep", "30s"),
	}
	res := runJob(t, job, 30*time.Second)
	noLeftovers(t, dir)
	var re *RankError
	if !errors.As(res.err, &re) || re.Rank != 2 || ExitCode(res.err) != 5 {
		t.Fatalf("Run: %v, want rank 2's failure with code 5", res.err)
	}
	if re.Terminated != 0 {
		t.Errorf("terminated %d ranks; they should have ended on the abort by themselves", re.Terminated)
	}
	if res.elapsed > 4*time.Second {
		t.Errorf("took %v: the ranks did not see the abort (AbortWait is 5s)", res.elapsed)
	}
	for _, r := range []string{"0", "1", "3"} {
		want := "rank " + r + ": control: job aborted by rank 2: rank 2 exited with code 5"
		if !strings.Contains(res.stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, res.stdout)
		}
	}
}

func TestRankAbortsJob(t *testing.T) {
	tests := []struct {
		name  string
		steps []string
		code  int
		what  string
	}{
		{"abort then hang", []string{"join", "ready", "DIR", "await@1", "DIR", "3", "abort@1", "bad input", "sleep", "30s"},
			1, `^rank 1 \(pid \d+ on \S+\) aborted the job: bad input; terminated 2 other ranks$`},
		{"abort then exit 0", []string{"join", "ready", "DIR", "await@1", "DIR", "3", "abort@1", "no data", "exit@1", "0", "sleep", "30s"},
			1, `^rank 1 \(pid \d+ on \S+\) aborted the job: no data; terminated 2 other ranks$`},
		{"abort then exit 7", []string{"join", "ready", "DIR", "await@1", "DIR", "3", "abort@1", "oops", "exit@1", "7", "sleep", "30s"},
			7, `^rank 1 \(pid \d+ on \S+\) exited with code 7; terminated 2 other ranks$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			job := &Job{Program: rankProg, NP: 3, Grace: time.Second, Args: script(dir, tt.steps...)}
			res := runJob(t, job, 30*time.Second)
			noLeftovers(t, dir)
			if ExitCode(res.err) != tt.code || !regexp.MustCompile(tt.what).MatchString(res.err.Error()) {
				t.Fatalf("Run: %v (code %d), want %q, code %d", res.err, ExitCode(res.err), tt.what, tt.code)
			}
		})
	}
}

// TestLostRank stops a rank with SIGSTOP: its heartbeats stop, the control
// plane reports it lost while its process lives, and the job fails on it.
// The stopped rank itself must be killed too.
func TestLostRank(t *testing.T) {
	dir := t.TempDir()
	job := &Job{Program: rankProg, NP: 3, Grace: time.Second, Args: script(dir, "join", "ready", "DIR", "await@1", "DIR", "3", "stop@1", "sleep", "60s")}
	res := runJob(t, job, 30*time.Second)
	noLeftovers(t, dir)
	var re *RankError
	if !errors.As(res.err, &re) || !re.Lost || re.Rank != 1 || ExitCode(res.err) != 1 {
		t.Fatalf("Run: %v, want rank 1 lost, exit code 1", res.err)
	}
	if !regexp.MustCompile(`^rank 1 \(pid \d+ on \S+\) lost its control connection while running; terminated 2 other ranks$`).MatchString(re.Error()) {
		t.Fatalf("summary %q", re.Error())
	}
	t.Logf("lost rank detected and job down in %v", res.elapsed)
}

// TestCrashIsNotLost: a rank killed while connected is reported by its
// exit status, not as a lost connection, although its socket closes first.
func TestCrashIsNotLost(t *testing.T) {
	dir := t.TempDir()
	job := &Job{Program: rankProg, NP: 3, Grace: time.Second, Args: script(dir, "join", "ready", "DIR", "await@0", "DIR", "3", "kill@0", "KILL", "sleep", "30s")}
	res := runJob(t, job, 30*time.Second)
	noLeftovers(t, dir)
	var re *RankError
	if !errors.As(res.err, &re) || re.Lost || re.Rank != 0 || re.Status.Signal != syscall.SIGKILL {
		t.Fatalf("Run: %v, want rank 0 killed by SIGKILL", res.err)
	}
}

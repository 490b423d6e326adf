package launcher

import (
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitCodePropagation(t *testing.T) {
	tests := []struct {
		name       string
		np         int
		steps      []string
		wantCode   int
		wantRank   int // -1: success
		wantStatus string
		wantTerm   int
	}{
		{"all succeed", 3, []string{"exit", "0"}, 0, -1, "", 0},
		{"one rank", 1, []string{"exit", "0"}, 0, -1, "", 0},
		{"rank 1 fails, others running", 3, []string{"exit@1", "3", "sleep", "30s"}, 3, 1, "exited with code 3", 2},
		{"rank 0 fails last", 3, []string{"exit@1", "0", "exit@2", "0", "gone", "DIR", "2", "exit", "7"}, 7, 0, "exited with code 7", 0},
		{"code 255", 2, []string{"exit@1", "255", "sleep", "30s"}, 255, 1, "exited with code 255", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			job := &Job{Program: rankProg, Args: script(dir, tt.steps...), NP: tt.np, Grace: 2 * time.Second}
			res := runJob(t, job, 20*time.Second)
			noLeftovers(t, dir)
			if got := ExitCode(res.err); got != tt.wantCode {
				t.Fatalf("exit code %d, want %d (err %v)", got, tt.wantCode, res.err)
			}
			if tt.wantRank < 0 {
				if res.err != nil {
					t.Fatalf("Run: %v", res.err)
				}
				return
			}
			var re *RankError
			if !errors.As(res.err, &re) {
				t.Fatalf("Run: %v (%T), want *RankError", res.err, res.err)
			}
			if re.Rank != tt.wantRank || re.Status.String() != tt.wantStatus || re.Terminated != tt.wantTerm {
				t.Fatalf("RankError %+v, want rank %d, %q, %d terminated", re, tt.wantRank, tt.wantStatus, tt.wantTerm)
			}
			host, _ := os.Hostname()
			want := "rank " + strconv.Itoa(tt.wantRank) + " (pid " + strconv.Itoa(re.Pid) + " on " + host + ") " + tt.wantStatus + "; terminated "
			if !strings.HasPrefix(re.Error(), want) {
				t.Fatalf("summary %q, want prefix %q", re.Error(), want)
			}
		})
	}
}

func TestDeathBySignal(t *testing.T) {
	tests := []struct {
		sig      string
		num      syscall.Signal
		wantCode int
	}{
		{"KILL", syscall.SIGKILL, 137},
		{"HUP", syscall.SIGHUP, 129},
		{"TERM", syscall.SIGTERM, 143},
	}
	for _, tt := range tests {
		t.Run(tt.sig, func(t *testing.T) {
			if signal.Ignored(tt.num) {
				// Under nohup, say: the ranks inherit the disposition
				// (as they should, the user asked for it), and a rank
				// cannot restore the default of a signal ignored when
				// it started (signal.Reset restores the ignore).
				t.Skipf("SIG%s is ignored in this process, and so in the ranks it starts", tt.sig)
			}
			dir := t.TempDir()
			job := &Job{Program: rankProg, Args: script(dir, "kill@2", tt.sig, "sleep", "30s"), NP: 4, Grace: 2 * time.Second}
			res := runJob(t, job, 20*time.Second)
			noLeftovers(t, dir)
			var re *RankError
			if !errors.As(res.err, &re) {
				t.Fatalf("Run: %v, want *RankError", res.err)
			}
			if re.Rank != 2 || re.Status.Signal != tt.num || ExitCode(res.err) != tt.wantCode || re.Terminated != 3 {
				t.Fatalf("RankError %+v, exit code %d; want rank 2, signal %d, code %d, 3 terminated", re, ExitCode(res.err), tt.num, tt.wantCode)
			}
			if want := "killed by SIG" + tt.sig; !strings.Contains(re.Error(), want) {
				t.Fatalf("summary %q does not say %q", re.Error(), want)
			}
			if !strings.HasSuffix(re.Error(), "terminated 3 other ranks") {
				t.Fatalf("summary %q does not count the terminated ranks", re.Error())
			}
		})
	}
}

// TestDeathBySignalShell covers a signal the Go runtime would turn into a
// panic (SIGSEGV) with a shell rank: the status must still say SIGSEGV.
func TestDeathBySignalShell(t *testing.T) {
	dir := t.TempDir()
	prog := `f=` + dir + `/$HCCL_RANK.pid; echo $$ > $f.tmp; mv $f.tmp $f; if [ "$HCCL_RANK" = 1 ]; then kill -SEGV $$; fi; exec sleep 30`
	job := &Job{Program: "sh", Args: []string{"-c", prog}, NP: 2, Grace: 2 * time.Second}
	res := runJob(t, job, 20*time.Second)
	noLeftovers(t, dir)
	var re *RankError
	if !errors.As(res.err, &re) || re.Rank != 1 || re.Status.Signal != syscall.SIGSEGV || ExitCode(res.err) != 139 {
		t.Fatalf("Run: %v, exit code %d; want rank 1 killed by SIGSEGV, 139", res.err, ExitCode(res.err))
	}
	if !strings.Contains(re.Error(), "killed by SIGSEGV (signal 11)") {
		t.Fatalf("summary %q does not name SIGSEGV", re.Error())
	}
}

// TestTeardownWithinGrace checks that every rank is gone within grace+1s of
// the first failure: ranks that handle SIGTERM end at once, a rank that
// ignores it is killed when the grace expires.
func TestTeardownWithinGrace(t *testing.T) {
	const grace = 1500 * time.Millisecond
	tests := []struct {
		name      string
		steps     []string
		minAfter  time.Duration // at least this long from the failure to the end
		trappedBy []string      // ranks that must have seen SIGTERM
	}{
		{
			name: "all handle SIGTERM",
			steps: []string{"trap", "TERM", "0", "ready", "DIR", "await@0", "DIR", "4", "stamp@0", "DIR",
				"exit@0", "5", "sleep", "30s"},
			trappedBy: []string{"1", "2", "3"},
		},
		{
			name: "rank 3 ignores SIGTERM",
			steps: []string{"trap@1", "TERM", "0", "trap@2", "TERM", "0", "ignore@3", "TERM", "ready", "DIR",
				"await@0", "DIR", "4", "stamp@0", "DIR", "exit@0", "5", "sleep", "30s"},
			minAfter:  grace - 100*time.Millisecond,
			trappedBy: []string{"1", "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Rank 0 fails only when every rank has set up its handlers
			// (await), and stamps the time of its failure.
			dir := t.TempDir()
			job := &Job{Program: rankProg, Args: script(dir, tt.steps...), NP: 4, Grace: grace}
			res := runJob(t, job, 20*time.Second)
			noLeftovers(t, dir)
			if ExitCode(res.err) != 5 {
				t.Fatalf("Run: %v; want rank 0's exit code 5", res.err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "0.stamp"))
			if err != nil {
				t.Fatal(err)
			}
			ns, _ := strconv.ParseInt(string(b), 10, 64)
			after := res.end.Sub(time.Unix(0, ns))
			t.Logf("teardown took %v after the failure (grace %v)", after, grace)
			if after > grace+time.Second {
				t.Fatalf("teardown took %v, more than grace+1s", after)
			}
			if after < tt.minAfter {
				t.Fatalf("teardown took %v: the rank ignoring SIGTERM was not given the grace %v", after, grace)
			}
			for _, r := range tt.trappedBy {
				if !strings.Contains(res.stdout.String(), "rank "+r+" trapped TERM") {
					t.Errorf("rank %s did not get SIGTERM; stdout:\n%s", r, res.stdout)
				}
			}
			var re *RankError
			if errors.As(res.err, &re) && re.Terminated != 3 {
				t.Errorf("terminated %d ranks, want 3", re.Terminated)
			}
		})
	}
}

package fault

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// Another user of the machine against a job's shared-memory sockets (the
// TCP ports are attacked in intruder_test.go). Those sockets are abstract
// unix sockets: no permissions, and /proc/net/unix lists their names. The
// intruder is test/progs/intruder run as nobody (uid 65534), which needs
// the suite to run as root; it sees what any user sees.

const intruderUID = 65534

var (
	intruderOnce sync.Once
	intruderPath string
	intruderErr  error
)

// intruderBin builds test/progs/intruder where uid 65534 may run it: next to
// hcclrun, in the suite's directory (which TestMain removes), made
// traversable for that.
func intruderBin(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to run the intruder as uid %d (running as uid %d)", intruderUID, os.Geteuid())
	}
	intruderOnce.Do(func() {
		dir := filepath.Dir(hcclrunBin)
		intruderPath = filepath.Join(dir, "intruder")
		if intruderErr = os.Chmod(dir, 0o755); intruderErr != nil {
			return
		}
		_, intruderErr = testprog.Build(dir, "test/progs/intruder")
	})
	if intruderErr != nil {
		t.Fatal(intruderErr)
	}
	return intruderPath
}

// intruder is a running test/progs/intruder.
type intruder struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	lines chan string
}

// startIntruder runs test/progs/intruder with args as uid 65534.
func startIntruder(t *testing.T, args ...string) *intruder {
	t.Helper()
	cmd := exec.Command(intruderBin(t), args...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: intruderUID, Gid: intruderUID}}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the intruder as uid %d: %v", intruderUID, err)
	}
	in := &intruder{cmd: cmd, stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			in.lines <- s.Text()
		}
		close(in.lines)
	}()
	t.Cleanup(in.stop)
	return in
}

// expect returns the intruder's lines up to the first that starts with
// word, that one included; it fails the test after d.
func (in *intruder) expect(t *testing.T, word string, d time.Duration) []string {
	t.Helper()
	var got []string
	timeout := time.After(d)
	for {
		select {
		case l, ok := <-in.lines:
			if !ok {
				t.Fatalf("the intruder exited before printing %q; it printed %q", word, got)
			}
			got = append(got, l)
			if strings.HasPrefix(l, word) {
				return got
			}
		case <-timeout:
			t.Fatalf("the intruder did not print %q within %v; it printed %q", word, d, got)
		}
	}
}

// stop ends the intruder (it lets go of its names when stdin closes).
func (in *intruder) stop() {
	in.stdin.Close()
	done := make(chan struct{})
	go func() { in.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		in.cmd.Process.Kill() // by PID
		<-done
	}
}

// gated runs the rank program at once for rank 0 and, for the others,
// once the file $FAULTSUITE_GATE exists: the intruder gets to see rank
// 0's socket, and to act, before the other ranks start.
const gated = `if [ "$HCCL_RANK" != 0 ]; then while [ ! -e "$FAULTSUITE_GATE" ]; do sleep 0.02; done; fi; exec "$0" "$@"`

// startGated starts a loop job of 4 ranks under gated with shared memory
// on, and returns it with the gate to open and rank 0's job id.
func startGated(t *testing.T, env []string, prefix []string, loop time.Duration) (j *job, gate string, jobID string) {
	t.Helper()
	gate = filepath.Join(t.TempDir(), "gate")
	env = append([]string{"HCCL_SHM_DISABLE=0", "FAULTSUITE_GATE=" + gate}, env...)
	j = startJob(t, env, prefix, args("sh", "-c", gated, faultProg, "-mode", "loop", "-count", "4096", "-for", loop.String())...)
	_, ms := j.waitLines(startRE, 1, 30*time.Second)
	return j, gate, ms[0][4]
}

func openGate(t *testing.T, gate string) time.Time {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// checkLoopDone fails the test unless hcclrun exited 0 with every rank
// done after the same number of checked AllReduces.
func (j *job) checkLoopDone() {
	j.t.Helper()
	_, done := j.matches(regexp.MustCompile(`^rank (\d+) done iters=(\d+)$`))
	iters := map[string]bool{}
	for _, m := range done {
		iters[m[2]] = true
	}
	if j.code != 0 || len(done) != 4 || len(iters) != 1 || len(j.errors()) > 0 {
		j.t.Fatalf("exit code %d, %d ranks done with iterations %v, errors %v; want 0, 4 ranks, one count, none\noutput:\n%s",
			j.code, len(done), iters, j.errors(), j.output())
	}
}

// warnings are the WARN lines the ranks logged.
func (j *job) warnings() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var w []string
	for _, l := range j.lines {
		if l.stderr && strings.Contains(l.text, "level=WARN") {
			w = append(w, l.text)
		}
	}
	return w
}

// TestShmSquatter: another user watches /proc/net/unix and, as soon as
// rank 0 of a job listens, binds every name it can guess for the other
// ranks before they start (as an unprivileged process did to 8 of 8 jobs,
// whose ranks failed Init). The names have a random tag now, which it
// cannot guess: the job runs over shared memory, undisturbed.
//
// With HCCL_SHM_SOCKET_TAG the tag is known and the intruder does take
// ranks 1-3's names: each of them warns once and reaches its peers over
// TCP, and the job still passes.
func TestShmSquatter(t *testing.T) {
	for _, tc := range []struct {
		name string
		tag  bool
	}{{"random names", false}, {"known tag", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var env, squat []string
			tag := ""
			if tc.tag {
				var b [8]byte
				rand.Read(b[:])
				tag = hex.EncodeToString(b[:])
				env = []string{"HCCL_SHM_SOCKET_TAG=" + tag}
			}
			j, gate, jobID := startGated(t, env, nil, 2*time.Second)
			squat = []string{"squat", "-job", jobID, "-ranks", "4"}
			if tag != "" {
				squat = append(squat, "-tag", tag)
			}
			in := startIntruder(t, squat...)
			out := in.expect(t, "squatted", 30*time.Second)
			bound := 0
			for _, l := range out {
				if strings.HasPrefix(l, "bound ") {
					bound++
				}
			}
			// Ranks 1-3's old names, and with the tag their real ones.
			if want := 3 + 3*btoi(tc.tag); bound < want {
				t.Fatalf("the intruder took %d names, want at least %d: the case proves nothing\n%s", bound, want, strings.Join(out, "\n"))
			}
			openGate(t, gate)
			rs := j.ranks(4, 30*time.Second)
			j.ready(4, 60*time.Second)
			j.noteRunning(rs)
			j.wait(60 * time.Second)
			in.stop()
			j.checkClean(rs)
			j.checkLoopDone()

			var listened []string
			for _, l := range j.running.listeners {
				if strings.HasPrefix(l.addr, "@hcclrun/"+jobID+"/") {
					listened = append(listened, l.addr)
				}
			}
			warns := j.warnings()
			if !tc.tag {
				if len(listened) != 4 || len(warns) > 0 {
					t.Errorf("ranks listened on %v and warned %q; want 4 names and no warning (every link over shared memory)", listened, warns)
				}
			} else {
				taken := 0
				for _, w := range warns {
					if strings.Contains(w, "shared-memory socket name is taken by another process") {
						taken++
					}
				}
				if taken != 3 || len(warns) != 3 {
					t.Errorf("warnings %q; want one from each of ranks 1-3 about its taken name, and no other", warns)
				}
			}
			t.Logf("intruder took %d names; job done in %v; ranks listened on %d shm names; %d warnings", bound, j.elapsed.Round(time.Millisecond), len(listened), len(warns))
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestShmFlood: another user opens 1500 connections to rank 0's
// shared-memory socket before the other ranks start and holds them,
// re-opening those that are closed, while the job joins and runs. The
// ranks run with 1024 descriptors, the usual limit, which such a flood
// exhausted when every connection held a descriptor and a goroutine for
// the 10 s set-up timeout: the late ranks' links to rank 0 stalled and
// thousands of warnings were printed. Now another user's connection is
// refused at once: rank 0 holds no more descriptors than usual, the job
// joins within seconds of the last rank's start and finishes on time, and
// the warnings are a handful.
func TestShmFlood(t *testing.T) {
	var prefix []string
	if _, err := exec.LookPath("prlimit"); err == nil {
		prefix = []string{"prlimit", "--nofile=1024:1024", "--"}
	} else {
		t.Logf("no prlimit(1): the ranks keep the suite's descriptor limit")
	}
	const loop = 3 * time.Second
	j, gate, jobID := startGated(t, nil, prefix, loop)
	rank0 := j.ranks(1, time.Second)[0]
	in := startIntruder(t, "flood", "-prefix", "@hcclrun/"+jobID+"/0", "-conns", "1500", "-for", "10s")
	in.expect(t, "flooding", 30*time.Second)
	before := countFDs(rank0.pid)

	released := openGate(t, gate)
	readyLines, _ := j.waitLines(readyRE, 4, 60*time.Second)
	joined := readyLines[len(readyLines)-1].at.Sub(released)
	during := countFDs(rank0.pid)
	rs := j.ranks(4, time.Second)
	j.noteRunning(rs)
	j.wait(60 * time.Second)
	ran := time.Since(released)
	done := in.expect(t, "done", 30*time.Second)
	in.stop()
	j.checkClean(rs)
	j.checkLoopDone()

	if joined > 5*time.Second {
		t.Errorf("the ranks took %v from the last one's start to the first Barrier, want a few seconds at most", joined.Round(time.Millisecond))
	}
	if ran > loop+10*time.Second {
		t.Errorf("the job took %v after the last rank started for a loop of %v", ran.Round(time.Millisecond), loop)
	}
	if before > 200 || during > 200 {
		t.Errorf("rank 0 held %d descriptors under the flood before the other ranks started and %d once they joined, want under 200", before, during)
	}
	if w := j.warnings(); len(w) > 20 {
		t.Errorf("%d warnings under the flood, want a handful; the first: %q", len(w), first(w))
	}
	t.Logf("flood: %s; rank 0 held %d and %d descriptors; joined %v after the gate, job done %v after it; %d warnings, e.g. %q",
		done[len(done)-1], before, during, joined.Round(time.Millisecond), ran.Round(time.Millisecond), len(j.warnings()), first(j.warnings()))
}

// countFDs is how many descriptors pid has open, -1 if it cannot be read.
func countFDs(pid int) int {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(fds)
}

package launcher

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	"github.com/hcclrun/hcclrun/internal/testprog"
)

// rankProg is the path of the built test/progs/rankprog, set by TestMain.
var rankProg string

func TestMain(m *testing.M) {
	if os.Getenv(agentModeEnv) == "1" {
		// This binary is the agent of an agent test (see startAgentProc).
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		if err := RunAgent(context.Background(), AgentConfig{In: os.Stdin, Out: os.Stdout, Signals: sigs}); err != nil {
			fmt.Fprintln(os.Stderr, "agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "launcher-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testprog.Build(dir, "test/progs/rankprog")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rankProg = bins[0]
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// jobRun is the outcome of one job run by runJob.
type jobRun struct {
	err            error
	stdout, stderr *syncbuf.Buffer
	elapsed        time.Duration
	end            time.Time
}

// runJob runs job with a deadline and fails the test if Run does not
// return by then. Stdout and Stderr are captured unless the job sets them.
func runJob(t *testing.T, job *Job, deadline time.Duration) jobRun {
	t.Helper()
	res := jobRun{stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}}
	if job.Stdout == nil {
		job.Stdout = res.stdout
	}
	if job.Stderr == nil {
		job.Stderr = res.stderr
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- job.Run(ctx) }()
	select {
	case res.err = <-done:
	case <-time.After(deadline):
		cancel()
		select {
		case <-done:
		case <-time.After(2*job.Grace + 5*time.Second):
		}
		t.Fatalf("job did not finish within %v; stdout:\n%s\nstderr:\n%s", deadline, res.stdout, res.stderr)
	}
	res.end = time.Now()
	res.elapsed = res.end.Sub(start)
	return res
}

// script returns rankprog arguments that first record the rank's pid in dir
// (for noLeftovers), then run steps, in which the word DIR stands for dir.
func script(dir string, steps ...string) []string {
	out := []string{"pid", dir}
	for _, s := range steps {
		if s == "DIR" {
			s = dir
		}
		out = append(out, s)
	}
	return out
}

// waitFiles waits until dir holds n files ending in suffix.
func waitFiles(t *testing.T, dir, suffix string, n int, deadline time.Duration) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		m, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
		if len(m) >= n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("only %d of %d %s files in %s after %v", len(m), n, suffix, dir, deadline)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readPids returns the pids recorded in dir's files with suffix (the first
// number of each).
func readPids(t *testing.T, dir, suffix string) []int {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
	var pids []int
	for _, name := range m {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			t.Fatalf("%s is empty: write it atomically", name)
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// liveProcs lists the processes that are not zombies, as ps sees them:
// pid -> pgid. PID 1 reaps orphans late on these machines, so a dead
// process can linger as a zombie; kill -0 would call it alive.
func liveProcs(t *testing.T) map[int]int {
	t.Helper()
	out, err := exec.Command("ps", "-e", "-o", "pid=,pgid=,stat=").Output()
	if err != nil {
		t.Fatalf("ps: %v", err)
	}
	live := make(map[int]int)
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || strings.HasPrefix(f[2], "Z") {
			continue
		}
		pid, _ := strconv.Atoi(f[0])
		pgid, _ := strconv.Atoi(f[1])
		live[pid] = pgid
	}
	return live
}

// noLeftovers fails the test if a rank recorded in dir (by the pid step), a
// grandchild recorded by the child step, or any member of a rank's process
// group is still alive. It allows a moment for SIGKILLed processes to be
// reported dead.
func noLeftovers(t *testing.T, dir string) {
	t.Helper()
	pids := append(readPids(t, dir, ".pid"), readPids(t, dir, ".child")...)
	if len(pids) == 0 {
		t.Fatalf("no pid recorded in %s: the check would prove nothing", dir)
	}
	groups := make(map[int]bool)
	for _, p := range readPids(t, dir, ".pid") {
		groups[p] = true // each rank leads its own process group
	}
	end := time.Now().Add(2 * time.Second)
	for {
		var left []string
		live := liveProcs(t)
		for _, p := range pids {
			if _, ok := live[p]; ok {
				left = append(left, fmt.Sprintf("pid %d", p))
			}
		}
		for p, g := range live {
			if groups[g] {
				left = append(left, fmt.Sprintf("pid %d of group %d", p, g))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("processes of the job left behind: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

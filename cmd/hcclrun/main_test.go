package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// Built by TestMain: the real hcclrun binary, the launcher's rank program,
// and a rank program that uses the real runtime.
var hcclrunBin, rankProg, hcclProg string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hcclrun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testprog.Build(dir, "cmd/hcclrun", "test/progs/rankprog", "test/progs/hcclprog")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hcclrunBin, rankProg, hcclProg = bins[0], bins[1], bins[2]
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is the outcome of one hcclrun run.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// hcclrun runs the binary with args to completion within deadline.
func hcclrun(t *testing.T, deadline time.Duration, stdin string, args ...string) result {
	t.Helper()
	cmd, out, errOut := command(stdin, args...)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return wait(t, cmd, out, errOut, start, deadline)
}

func command(stdin string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(hcclrunBin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd, &out, &errOut
}

// wait waits for a started hcclrun; past the deadline it is killed and the
// test fails.
func wait(t *testing.T, cmd *exec.Cmd, out, errOut *bytes.Buffer, start time.Time, deadline time.Duration) result {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(deadline):
		cmd.Process.Kill()
		<-done
		if out != nil {
			t.Fatalf("hcclrun %q did not finish within %v\nstdout:\n%s\nstderr:\n%s", cmd.Args, deadline, out, errOut)
		}
		t.Fatalf("hcclrun %q did not finish within %v", cmd.Args, deadline)
	}
	res := result{code: cmd.ProcessState.ExitCode(), elapsed: time.Since(start)}
	if out != nil {
		res.stdout, res.stderr = out.String(), errOut.String()
	}
	return res
}

// rankArgs returns the arguments to run n ranks of rankprog with steps, the
// word DIR standing for dir, after the launcher flags.
func rankArgs(dir string, flags []string, steps ...string) []string {
	args := append(append([]string(nil), flags...), rankProg, "pid", dir)
	for _, s := range steps {
		if s == "DIR" {
			s = dir
		}
		args = append(args, s)
	}
	return args
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
			t.Fatalf("only %d of %d %s files after %v", len(m), n, suffix, deadline)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noLeftovers fails the test if a rank recorded in dir, or any member of its
// process group, is alive (not a zombie) after a short grace for the
// kernel to deliver SIGKILLs.
func noLeftovers(t *testing.T, dir string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	if len(m) == 0 {
		t.Fatalf("no pid recorded in %s: the check would prove nothing", dir)
	}
	groups := map[int]bool{}
	for _, f := range m {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.Fields(string(b))[0])
		if err != nil {
			t.Fatal(err)
		}
		groups[pid] = true
	}
	end := time.Now().Add(2 * time.Second)
	for {
		out, err := exec.Command("ps", "-e", "-o", "pid=,pgid=,stat=").Output()
		if err != nil {
			t.Fatalf("ps: %v", err)
		}
		var left []string
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || strings.HasPrefix(f[2], "Z") {
				continue
			}
			pid, _ := strconv.Atoi(f[0])
			pgid, _ := strconv.Atoi(f[1])
			if groups[pid] || groups[pgid] {
				left = append(left, line)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("processes of the job left behind:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var _ = context.Background

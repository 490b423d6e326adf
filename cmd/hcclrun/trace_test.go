package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/runtime/trace"
)

// TestTraceOnSignal: ranks that die by SIGTERM (hcclrun forwards it)
// still write their traces, saying so, with the calls they made; the
// job is seen inside its AllReduce loop through hcclrun status first.
func TestTraceOnSignal(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "trace")
	env := append(os.Environ(), "TMPDIR="+tmp)
	cmd := exec.Command(hcclrunBin, "-np", "3", "--trace", dir, hcclProg, "-iters", "100000000", "-bytes", "8")
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()
	inCall := regexp.MustCompile(`(?m)^\d+ .* #\d+ AllReduce step`)
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		st := exec.Command(hcclrunBin, "status", strconv.Itoa(cmd.Process.Pid))
		st.Env = env
		out, _ := st.CombinedOutput()
		if len(inCall.FindAll(out, -1)) == 3 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the job's ranks are not all inside an AllReduce after 60 s:\n%s", out)
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("hcclrun did not end within 30 s of SIGTERM")
	}
	files, err := trace.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("%d trace files, want 3", len(files))
	}
	for _, f := range files {
		if f.Written != "signal terminated" || len(f.Calls) == 0 {
			t.Errorf("rank %d: written by %q with %d calls, want signal terminated and some calls", f.Rank, f.Written, len(f.Calls))
		}
	}
}

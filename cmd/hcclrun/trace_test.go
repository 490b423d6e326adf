package main

import (
	"encoding/json"
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

// TestTracePairCalls: at np 2 an 8-byte AllReduce runs as the executor's
// pair step, recorded as one event per call and expanded when the file is
// written: every traced AllReduce still has its send, its receive (the
// call's whole time, all of it waiting) and its local ops, with the peer
// and the bytes, inside the call; the merged timeline has them as steps
// and waits.
func TestTracePairCalls(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "trace")
	r := hcclrun(t, 60*time.Second, "", "-np", "2", "--trace", dir, hcclProg, "-iters", "50", "-bytes", "8")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	files, err := trace.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("%d trace files, want 2", len(files))
	}
	for _, f := range files {
		ops := map[uint64][]trace.Op{}
		for _, op := range f.Ops {
			ops[op.Seq] = append(ops[op.Seq], op)
		}
		n := 0
		for _, c := range f.Calls {
			if c.Coll != "AllReduce" {
				continue
			}
			n++
			var send, recv bool
			for _, op := range ops[c.Seq] {
				if op.StartNs < c.StartNs || op.EndNs > c.EndNs || op.WaitNs > op.EndNs-op.StartNs || op.Bytes != 8 {
					t.Errorf("rank %d call %+v: op %+v outside it or not 8 bytes", f.Rank, c, op)
				}
				switch op.Op {
				case "Send":
					send = op.Peer == 1-f.Rank && op.StartNs == c.StartNs
				case "Recv", "RecvReduce":
					recv = op.Peer == 1-f.Rank && op.StartNs == c.StartNs && op.EndNs == c.EndNs && op.WaitNs == c.EndNs-c.StartNs
				}
			}
			if !send || !recv || c.Bytes != 8 || c.Algo == "" || c.EndNs <= c.StartNs {
				t.Errorf("rank %d call %+v: ops %+v, want a send and a receive from rank %d spanning it", f.Rank, c, ops[c.Seq], 1-f.Rank)
			}
		}
		if n != 50 {
			t.Errorf("rank %d: %d AllReduces traced, want 50", f.Rank, n)
		}
	}
	b := mergeTrace(t, dir)
	var tl struct {
		TraceEvents []struct{ Cat, Ph string } `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tl); err != nil {
		t.Fatal(err)
	}
	cats := map[string]int{}
	for _, e := range tl.TraceEvents {
		if e.Ph == "X" {
			cats[e.Cat]++
		}
	}
	if cats["call"] < 100 || cats["step"] < 100 || cats["wait"] < 100 {
		t.Errorf("merged timeline has %v complete events, want a call, a step and a wait for each of 2x50 AllReduces", cats)
	}
}

// TestTraceSplitChildren: a communicator made by Split traces into a file
// of its own per rank, named for it, whose ops name their peers by rank in
// the job; the merged timeline has a track for it under each rank's.
func TestTraceSplitChildren(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "trace")
	r := hcclrun(t, 60*time.Second, "", "-np", "4", "--trace", dir, hcclProg, "-iters", "5", "-bytes", "4096", "-split", "2")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	files, err := trace.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	children := 0
	for _, f := range files {
		if f.Comm == "" {
			continue
		}
		children++
		peer := (f.Rank + 2) % 4 // colors rank%2: ranks 0 and 2, 1 and 3
		if f.CommSize != 2 || f.CommRank != f.Rank/2 || f.Written != "close" {
			t.Errorf("rank %d comm %s: rank %d of %d, written %q; want %d of 2 at close", f.Rank, f.Comm, f.CommRank, f.CommSize, f.Written, f.Rank/2)
		}
		n := 0
		for _, c := range f.Calls {
			if c.Coll == "AllReduce" && c.Bytes == 4096 {
				n++
			}
		}
		if n != 5 {
			t.Errorf("rank %d comm %s: %d AllReduces of 4096 B traced, want 5", f.Rank, f.Comm, n)
		}
		for _, op := range f.Ops {
			if op.Peer >= 0 && op.Peer != peer {
				t.Errorf("rank %d comm %s: op %+v names peer %d, want rank %d of the job", f.Rank, f.Comm, op, op.Peer, peer)
			}
		}
		if tr := f.Transports[strconv.Itoa(peer)]; tr != "shm" || len(f.Transports) != 1 {
			t.Errorf("rank %d comm %s: transports %v, want shm to rank %d only", f.Rank, f.Comm, f.Transports, peer)
		}
	}
	if children != 4 || len(files) != 8 {
		t.Fatalf("%d files, %d of children; want 4 of the job's communicator and 4 of its children", len(files), children)
	}
	b := mergeTrace(t, dir)
	var tl struct {
		TraceEvents []struct {
			Name, Cat, Ph string
			Tid           int
			Args          map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tl); err != nil {
		t.Fatal(err)
	}
	names, calls := map[int]string{}, map[int]int{}
	for _, e := range tl.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "thread_name":
			names[e.Tid], _ = e.Args["name"].(string)
		case e.Ph == "X" && e.Cat == "call" && e.Name == "AllReduce":
			calls[e.Tid]++
		}
	}
	child := regexp.MustCompile(`^rank [0-3] comm 0x[0-9a-f]+ \([01] of 2\)$`)
	kids := 0
	for tid, name := range names {
		if child.MatchString(name) {
			kids++
			if calls[tid] != 5 {
				t.Errorf("track %q: %d AllReduces, want 5", name, calls[tid])
			}
		}
	}
	if len(names) != 8 || kids != 4 {
		t.Errorf("tracks %v: want 4 ranks' and 4 children's", names)
	}
}

// mergeTrace runs hcclrun trace merge on dir and returns the timeline.
func mergeTrace(t *testing.T, dir string) []byte {
	t.Helper()
	merged := filepath.Join(t.TempDir(), "job.json")
	if r := hcclrun(t, 60*time.Second, "", "trace", "merge", dir, "-o", merged); r.code != 0 {
		t.Fatalf("trace merge: exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

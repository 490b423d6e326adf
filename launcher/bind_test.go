package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	"github.com/hcclrun/hcclrun/ranktable"
)

func TestParseBindPolicy(t *testing.T) {
	for in, want := range map[string]BindPolicy{"": BindAuto, "auto": BindAuto, "none": BindNone, "core": BindCore, "hwthread": BindCore} {
		if got, err := ParseBindPolicy(in); err != nil || got != want {
			t.Errorf("ParseBindPolicy(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseBindPolicy("socket"); !errors.Is(err, ErrUsage) {
		t.Errorf("ParseBindPolicy(socket): %v, want a usage error", err)
	}
}

// affinityOf reads the Cpus_allowed_list of a /proc status file.
func affinityOf(t *testing.T, status string) []int {
	t.Helper()
	b, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := allowedList(b)
	if err != nil {
		t.Fatalf("%s: %v", status, err)
	}
	return cpus
}

// allowedList parses the Cpus_allowed_list line of a /proc status file.
func allowedList(status []byte) ([]int, error) {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return ranktable.ParseCPUList(strings.TrimSpace(v))
		}
	}
	return nil, errors.New("no Cpus_allowed_list")
}

// TestBindRanks starts real ranks under each policy and reads their
// affinity from /proc: bound ranks share out the launcher's CPUs without
// overlap, unbound ones (BindNone, or more ranks than CPUs) keep all of
// them, and no thread of the launcher stays bound after starting them.
func TestBindRanks(t *testing.T) {
	all, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	n := len(all)
	tests := []struct {
		name  string
		bind  BindPolicy
		np    int
		bound bool // each rank gets its own share; else every rank has all CPUs
		each  int  // CPUs per bound rank, 0 for "a block"
	}{
		{"auto, a CPU each", BindAuto, n, true, 1},
		{"auto, oversubscribed", BindAuto, n + 1, false, 0},
		{"none", BindNone, n, false, 0},
		{"core, one rank", BindCore, 1, true, 1},
		{"auto, one rank", BindAuto, 1, true, n},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			// Each rank writes its own status file, then lingers until the
			// test has looked at the launcher's threads.
			release := filepath.Join(dir, "release")
			prog := `cp /proc/self/status "` + dir + `/rank-$HCCL_RANK"; while [ ! -e "` + release + `" ]; do sleep 0.02; done`
			job := &Job{Program: "/bin/sh", Args: []string{"-c", prog}, NP: tt.np, Bind: tt.bind, Stdout: &syncbuf.Buffer{}, Stderr: &syncbuf.Buffer{}}
			done := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			go func() { done <- job.Run(ctx) }()
			// Every rank has started: the launcher's own binding (the
			// hand-off measurement before the first rank, each spawning
			// thread until its fork returns) must be over, give or take
			// the moment between a fork and its restore.
			waitRanks(t, dir, tt.np, done)
			var bound []string
			for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				bound = boundThreads(t, all)
				if len(bound) == 0 || time.Now().After(deadline) {
					break
				}
			}
			for _, b := range bound {
				t.Errorf("launcher thread %s while its ranks run, want %v", b, all)
			}
			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			var union []int
			for r := 0; r < tt.np; r++ {
				got := affinityOf(t, filepath.Join(dir, "rank-"+strconv.Itoa(r)))
				switch {
				case !tt.bound && !slices.Equal(got, all):
					t.Errorf("rank %d bound to %v, want unbound (%v)", r, got, all)
				case tt.bound && tt.each > 0 && len(got) != tt.each:
					t.Errorf("rank %d bound to %v, want %d CPUs", r, got, tt.each)
				}
				union = append(union, got...)
			}
			if tt.bound {
				slices.Sort(union)
				if len(slices.Compact(slices.Clone(union))) != len(union) {
					t.Errorf("bound ranks overlap: %v", union)
				}
				for _, c := range union {
					if !slices.Contains(all, c) {
						t.Errorf("a rank bound to CPU %d, which the launcher may not use (%v)", c, all)
					}
				}
			}
		})
	}
}

// waitRanks waits until np ranks have written their status file into
// dir, failing the test if the job ends first.
func waitRanks(t *testing.T, dir string, np int, done <-chan error) {
	t.Helper()
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "rank-*"))
		if len(files) == np {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the job ended before its %d ranks had started (%d had): %v", np, len(files), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// boundThreads names the threads of this process whose affinity is not
// all, with the CPUs they are bound to.
func boundThreads(t *testing.T, all []int) []string {
	t.Helper()
	var bound []string
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	for _, st := range tasks {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // the thread has ended
		}
		cpus, err := allowedList(b)
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		if !slices.Equal(cpus, all) {
			bound = append(bound, filepath.Base(filepath.Dir(st))+" bound to "+fmt.Sprint(cpus))
		}
	}
	return bound
}

// TestBindCoreOversubscribed: more ranks than CPUs under BindCore fails
// before anything starts, saying why and what to do.
func TestBindCoreOversubscribed(t *testing.T) {
	all, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	job := &Job{Program: "/bin/true", NP: len(all) + 1, Bind: BindCore}
	err = job.Run(context.Background())
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--bind-to none") {
		t.Fatalf("Run: %v, want a usage error naming --bind-to none", err)
	}
}

// TestBindAgentRanks: the ranks of a host reached through an agent are
// bound too, from the CPUs the agent reported, one each when they are as
// many as the CPUs; the rank table says so.
func TestBindAgentRanks(t *testing.T) {
	all, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	prog := `cp /proc/self/status "` + dir + `/rank-$HCCL_RANK"; cp "$HCCL_RANK_TABLE_FILE" "` + dir + `/table-$HCCL_RANK"`
	job := &Job{Program: "/bin/sh", Args: []string{"-c", prog}, Hosts: []Host{agentHost(t, "node-a", len(all))}}
	if res := runJob(t, job, 30*time.Second); res.err != nil {
		t.Fatalf("Run: %v\n%s", res.err, res.stderr)
	}
	var seen []int
	for r := range all {
		got := affinityOf(t, filepath.Join(dir, "rank-"+strconv.Itoa(r)))
		if len(got) != 1 || slices.Contains(seen, got[0]) {
			t.Errorf("rank %d bound to %v (others: %v), want a CPU of its own", r, got, seen)
		}
		seen = append(seen, got...)
		table, err := ranktable.ReadFile(filepath.Join(dir, "table-"+strconv.Itoa(r)))
		if err != nil {
			t.Fatal(err)
		}
		_, d, err := table.Device(r)
		if err != nil {
			t.Fatal(err)
		}
		if cpus, _ := d.CPUs(); !slices.Equal(cpus, got) {
			t.Errorf("rank %d: the table says %v, the rank runs on %v", r, cpus, got)
		}
	}
}

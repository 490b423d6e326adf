package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
)

func TestExportEnv(t *testing.T) {
	lookup := func(name string) (string, bool) {
		v, ok := map[string]string{"HOME": "/root", "EMPTY": ""}[name]
		return v, ok
	}
	tests := []struct {
		in      []string
		env     []string
		missing []string
		err     string
	}{
		{nil, nil, nil, ""},
		{[]string{"A=1", "B=x=y,z", "C="}, []string{"A=1", "B=x=y,z", "C="}, nil, ""},
		{[]string{"HOME", "EMPTY", "NOPE"}, []string{"HOME=/root", "EMPTY="}, []string{"NOPE"}, ""},
		{[]string{"_x9=1"}, []string{"_x9=1"}, nil, ""},
		{[]string{"=1"}, nil, nil, `-x "=1": not a variable name`},
		{[]string{"9A=1"}, nil, nil, `-x "9A=1": not a variable name`},
		{[]string{"A-B=1"}, nil, nil, `not a variable name`},
		{[]string{""}, nil, nil, `not a variable name`},
	}
	for _, tt := range tests {
		env, missing, err := ExportEnv(tt.in, lookup)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || ExitCode(err) != ExitUsage {
				t.Errorf("ExportEnv(%q): %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(env) != fmt.Sprint(tt.env) || fmt.Sprint(missing) != fmt.Sprint(tt.missing) {
			t.Errorf("ExportEnv(%q) = %q, %q, %v; want %q, %q", tt.in, env, missing, err, tt.env, tt.missing)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	got := mergeEnv([]string{"A=1", "B=2", "A=3"}, []string{"C=4", "B=5", "B=6"})
	if want := "[A=3 B=6 C=4]"; fmt.Sprint(got) != want {
		t.Fatalf("mergeEnv = %q, want %s", got, want)
	}
}

func TestRankEnvNames(t *testing.T) {
	env := RankEnv(RankIdentity{Rank: 5, WorldSize: 8, LocalRank: 1, LocalWorldSize: 4, NodeRank: 1},
		JobEnv{RankTableFile: "/t/rt.json", ControlAddr: "10.0.0.1:5000", JobID: "j", JobKey: "k", Nodes: 2})
	want := []string{
		"HCCL_RANK=5", "HCCL_WORLD_SIZE=8", "HCCL_LOCAL_RANK=1", "HCCL_LOCAL_WORLD_SIZE=4", "HCCL_NODE_RANK=1",
		"HCCL_RANK_TABLE_FILE=/t/rt.json", "HCCL_CONTROL_ADDR=10.0.0.1:5000", "HCCL_JOB_ID=j", "HCCL_JOB_KEY=k",
		"RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=4",
		"GROUP_RANK=1", "GROUP_WORLD_SIZE=2", "ROLE_NAME=default", "ROLE_RANK=5", "ROLE_WORLD_SIZE=8",
		"TORCHELASTIC_RUN_ID=j", "TORCHELASTIC_RESTART_COUNT=0", "TORCHELASTIC_MAX_RESTARTS=0",
		"OMPI_COMM_WORLD_RANK=5", "OMPI_COMM_WORLD_SIZE=8", "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=4",
		"RANK_ID=5", "RANK_SIZE=8", "RANK_TABLE_FILE=/t/rt.json",
	}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Fatalf("RankEnv =\n%q\nwant\n%q", env, want)
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		st   ExitStatus
		code int
		text string
	}{
		{Exited(0), 0, "exited with code 0"},
		{Exited(3), 3, "exited with code 3"},
		{Signaled(syscall.SIGKILL), 137, "killed by SIGKILL (signal 9)"},
		{Signaled(syscall.SIGSEGV), 139, "killed by SIGSEGV (signal 11)"},
		{Signaled(syscall.Signal(60)), 188, "killed by signal 60 (signal 60)"},
	}
	for _, tt := range tests {
		if tt.st.ExitCode() != tt.code || tt.st.String() != tt.text || tt.st.Success() != (tt.code == 0) {
			t.Errorf("%+v: code %d %q, want %d %q", tt.st, tt.st.ExitCode(), tt.st.String(), tt.code, tt.text)
		}
	}
}

func TestAdvertised(t *testing.T) {
	tests := []struct{ listener, advertise, want string }{
		{"127.0.0.1:4242", "", "127.0.0.1:4242"},
		{"0.0.0.0:4242", "10.77.0.254", "10.77.0.254:4242"},
		{"[::]:4242", "fe80::1", "[fe80::1]:4242"},
		{"0.0.0.0:4242", "h0:5000", "h0:5000"},
	}
	for _, tt := range tests {
		if got, err := advertised(tt.listener, tt.advertise); err != nil || got != tt.want {
			t.Errorf("advertised(%q, %q) = %q, %v; want %q", tt.listener, tt.advertise, got, err, tt.want)
		}
	}
}

// TestLocalSpawner exercises the Spawner contract on its own: the staged
// table's modes and removal, output delivered before Wait returns, and
// Signal after the exit doing nothing.
func TestLocalSpawner(t *testing.T) {
	s := NewLocalSpawner("")
	if h, _ := os.Hostname(); s.Host() != h {
		t.Fatalf("Host() = %q, want the hostname %q", s.Host(), h)
	}
	path, err := s.StageRankTable([]byte(`{"secret":"table"}`))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("table %s: %v, mode %v", path, err, fi.Mode())
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("table dir: %v, mode %v", err, di.Mode())
	}

	var out, errOut syncbuf.Buffer
	p, err := s.Start(ProcSpec{Rank: 0, Path: "sh", Args: []string{"-c", `cat "$T"; echo oops >&2; exit 4`},
		Env: []string{"T=" + path}, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var st ExitStatus
	go func() { st, err = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
	}
	if err != nil || st != Exited(4) || out.String() != `{"secret":"table"}` || errOut.String() != "oops\n" {
		t.Fatalf("Wait = %v, %v; stdout %q, stderr %q", st, err, out.String(), errOut.String())
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("Signal after exit: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("table dir left after Close: %v", err)
	}
}

// The sweep removes the table directories whose lock nobody holds (their
// launcher or agent died), of the sweeper's own prefix, holding the lock
// file and the table only; nothing else.
func TestSweepStaleTables(t *testing.T) {
	const (
		unlocked = iota // a lock file nobody holds
		locked          // a lock file held, as a live launcher does
		noLock          // no lock file (an older launcher's, or not ours)
	)
	tests := []struct {
		name, prefix string
		lock         int
		table        bool
		extra        bool // a file besides the table: not ours to remove
		removed      bool
	}{
		{"hcclrun-7-123", tableDirPrefix, unlocked, true, false, true},
		{"hcclrun-7-124", tableDirPrefix, locked, true, false, false},
		{"hcclrun-7-125", tableDirPrefix, unlocked, true, true, false},
		{"hcclrun-7-126", tableDirPrefix, noLock, true, false, false},
		{"hcclrun-7-127", tableDirPrefix, unlocked, false, false, false}, // its launcher is about to lock it
		{"hcclrun-agent-h2-7-55", tableDirPrefix, unlocked, true, false, false},
		{"hcclrun-agent-h2-7-56", agentTableDirPrefix + "h2-", unlocked, true, false, true},
		{"hcclrun-agent-h2-7-57", agentTableDirPrefix + "h2-", locked, true, false, false},
		{"hcclrun-agent-node-1-7-58", agentTableDirPrefix + "node-", unlocked, true, false, false},
		{"hcclrun-agent-h20-7-59", agentTableDirPrefix + "h2-", unlocked, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name+" by "+tt.prefix, func(t *testing.T) {
			tmp := t.TempDir()
			d := filepath.Join(tmp, tt.name)
			os.Mkdir(d, 0o700)
			switch tt.lock {
			case unlocked:
				os.WriteFile(filepath.Join(d, lockFileName), nil, 0o600)
			case locked:
				// A lock is held by an open file description: the sweep's
				// own open of the file conflicts with it, as another
				// process's would.
				f, err := lockTableDir(d)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
			}
			if tt.table {
				os.WriteFile(filepath.Join(d, tableFileName), []byte("{}"), 0o600)
			}
			if tt.extra {
				os.WriteFile(filepath.Join(d, "other"), nil, 0o600)
			}
			sweepStaleTables(tmp, tt.prefix)
			_, err := os.Stat(d)
			if gone := os.IsNotExist(err); gone != tt.removed {
				t.Fatalf("removed = %v, want %v", gone, tt.removed)
			}
		})
	}
}

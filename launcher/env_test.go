package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/ranktable"
)

// TestEnvironmentContract runs ranks that print their environment and the
// rank table, and checks every variable of DESIGN.md, the table's mode and
// contents, and that the table is gone when the job has ended.
func TestEnvironmentContract(t *testing.T) {
	const np = 3
	dir := t.TempDir()
	t.Setenv("HCCLRUN_TEST_PASSED", "from the launcher")
	var logs bytes.Buffer
	job := &Job{
		Program: rankProg, NP: np, TagOutput: true,
		Args:   script(dir, "env", "table"),
		Export: []string{"HCCLRUN_TEST_SET=a=b,c", "HCCLRUN_TEST_PASSED", "HCCLRUN_TEST_UNSET_VAR"},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	res := runJob(t, job, 20*time.Second)
	noLeftovers(t, dir)
	if res.err != nil {
		t.Fatalf("Run: %v\n%s", res.err, res.stderr)
	}
	envs, tables := splitTagged(t, res.stdout.String(), np)
	var key, jobID, tablePath string
	for r := 0; r < np; r++ {
		env := envs[r]
		want := map[string]string{
			"HCCL_RANK": strconv.Itoa(r), "HCCL_WORLD_SIZE": strconv.Itoa(np),
			"HCCL_LOCAL_RANK": strconv.Itoa(r), "HCCL_LOCAL_WORLD_SIZE": strconv.Itoa(np),
			"HCCL_NODE_RANK": "0",
			"RANK":           strconv.Itoa(r), "WORLD_SIZE": strconv.Itoa(np),
			"LOCAL_RANK": strconv.Itoa(r), "LOCAL_WORLD_SIZE": strconv.Itoa(np),
			"OMPI_COMM_WORLD_RANK": strconv.Itoa(r), "OMPI_COMM_WORLD_SIZE": strconv.Itoa(np),
			"OMPI_COMM_WORLD_LOCAL_RANK": strconv.Itoa(r), "OMPI_COMM_WORLD_LOCAL_SIZE": strconv.Itoa(np),
			"RANK_ID": strconv.Itoa(r), "RANK_SIZE": strconv.Itoa(np),
			"RANK_TABLE_FILE":     env["HCCL_RANK_TABLE_FILE"],
			"HCCLRUN_TEST_SET":    "a=b,c",
			"HCCLRUN_TEST_PASSED": "from the launcher",
			"TABLE_MODE":          "0600",
		}
		for k, v := range want {
			if got, ok := env[k]; !ok || got != v {
				t.Errorf("rank %d: %s=%q (set %v), want %q", r, k, got, ok, v)
			}
		}
		if _, ok := env["HCCLRUN_TEST_UNSET_VAR"]; ok {
			t.Errorf("rank %d: an unset -x variable was exported", r)
		}
		if !regexp.MustCompile(`^127\.0\.0\.1:[0-9]+$`).MatchString(env["HCCL_CONTROL_ADDR"]) {
			t.Errorf("rank %d: HCCL_CONTROL_ADDR=%q, want 127.0.0.1:port", r, env["HCCL_CONTROL_ADDR"])
		}
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(env["HCCL_JOB_KEY"]) {
			t.Errorf("rank %d: HCCL_JOB_KEY is not 32 bytes of hex", r)
		}
		if r == 0 {
			key, jobID, tablePath = env["HCCL_JOB_KEY"], env["HCCL_JOB_ID"], env["HCCL_RANK_TABLE_FILE"]
		} else if env["HCCL_JOB_KEY"] != key || env["HCCL_JOB_ID"] != jobID || env["HCCL_RANK_TABLE_FILE"] != tablePath {
			t.Errorf("rank %d: job key, id or table differ from rank 0's", r)
		}
		if env["HCCL_PATH_FOR_TEST"] != "" {
			t.Errorf("unexpected variable")
		}
		if _, ok := env["PATH"]; !ok {
			t.Errorf("rank %d did not inherit the launcher's environment (PATH)", r)
		}

		table, err := ranktable.Parse([]byte(tables[r]))
		if err != nil {
			t.Fatalf("rank %d: rank table: %v\n%s", r, err, tables[r])
		}
		if err := table.Validate(); err != nil {
			t.Fatalf("rank %d: rank table: %v", r, err)
		}
		loc, err := table.Locate(r)
		if err != nil || table.Size() != np || loc.Local != r || loc.Node != 0 || loc.LocalSize != np {
			t.Errorf("rank %d: table locates it at %+v (%v), size %d", r, loc, err, table.Size())
		}
		if table.ControlAddr != env["HCCL_CONTROL_ADDR"] || table.JobID != env["HCCL_JOB_ID"] {
			t.Errorf("rank %d: table control %q job %q, env %q %q", r, table.ControlAddr, table.JobID, env["HCCL_CONTROL_ADDR"], env["HCCL_JOB_ID"])
		}
		if strings.Contains(tables[r], key) {
			t.Errorf("the job key is in the rank table")
		}
	}
	if !strings.HasPrefix(jobID, "hccl-") {
		t.Errorf("job id %q", jobID)
	}
	if _, err := os.Stat(tablePath); !os.IsNotExist(err) {
		t.Errorf("rank table %s still there after the job: %v", tablePath, err)
	}
	if _, err := os.Stat(filepath.Dir(tablePath)); !os.IsNotExist(err) {
		t.Errorf("rank table directory still there after the job: %v", err)
	}
	if strings.Contains(logs.String(), key) || strings.Contains(res.stderr.String(), key) {
		t.Errorf("the job key was logged or printed")
	}
	if !strings.Contains(logs.String(), "HCCLRUN_TEST_UNSET_VAR") {
		t.Errorf("the unset -x variable was not reported; log:\n%s", logs.String())
	}
}

// splitTagged separates tagged output per rank into the env step's
// variables and the rest (the rank table).
func splitTagged(t *testing.T, out string, np int) ([]map[string]string, []string) {
	t.Helper()
	envs := make([]map[string]string, np)
	rest := make([]strings.Builder, np)
	for r := range envs {
		envs[r] = make(map[string]string)
	}
	inTable := make([]bool, np)
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var r int
		if _, err := fmt.Sscanf(line, "[1,%d]<stdout>:", &r); err != nil || r < 0 || r >= np {
			t.Fatalf("untagged line %q", line)
		}
		body := strings.TrimPrefix(line, fmt.Sprintf("[1,%d]<stdout>:", r))
		if inTable[r] || body == "{" {
			inTable[r] = true
			rest[r].WriteString(body + "\n")
			continue
		}
		k, v, _ := strings.Cut(body, "=")
		envs[r][k] = v
	}
	tables := make([]string, np)
	for r := range rest {
		tables[r] = rest[r].String()
	}
	return envs, tables
}

func TestArgumentPassThrough(t *testing.T) {
	args := []string{"--lr", "0.1", "-n", "3", "", "a b", "-np", "--", "--tag-output", "ü\t$HOME"}
	dir := t.TempDir()
	job := &Job{Program: rankProg, NP: 2, TagOutput: true, Args: append(script(dir, "args"), args...)}
	res := runJob(t, job, 10*time.Second)
	noLeftovers(t, dir)
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	got := make([]strings.Builder, 2)
	for _, line := range strings.SplitAfter(res.stdout.String(), "\n") {
		for r := range got {
			if tag := fmt.Sprintf("[1,%d]<stdout>:", r); strings.HasPrefix(line, tag) {
				got[r].WriteString(strings.TrimPrefix(line, tag))
			}
		}
	}
	var want strings.Builder
	for _, a := range args {
		fmt.Fprintf(&want, "arg: %q\n", a)
	}
	for r := range got {
		if got[r].String() != want.String() {
			t.Fatalf("rank %d saw\n%s\nwant\n%s\nall output:\n%s", r, got[r].String(), want.String(), res.stdout)
		}
	}
}

func TestStdinGoesToRankZero(t *testing.T) {
	dir := t.TempDir()
	input := strings.Repeat("line of input\n", 5000) + "last"
	job := &Job{Program: rankProg, NP: 3, TagOutput: true, Args: script(dir, "cat", "echo", "done"), Stdin: strings.NewReader(input)}
	res := runJob(t, job, 10*time.Second)
	noLeftovers(t, dir)
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	var got0 strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(res.stdout.String(), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "[1,0]<stdout>:"):
			got0.WriteString(strings.TrimPrefix(line, "[1,0]<stdout>:") + "\n")
		case line == "[1,1]<stdout>:done", line == "[1,2]<stdout>:done":
		default:
			t.Fatalf("unexpected line %q: a rank other than 0 read stdin?", line)
		}
	}
	// rank 0's "last" has no newline; its "done" follows on the same line.
	if want := strings.Repeat("line of input\n", 5000) + "lastdone\n"; got0.String() != want {
		t.Fatalf("rank 0 echoed %d bytes, want %d", got0.Len(), len(want))
	}
}

func TestStartAndUsageErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "notexec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		job   Job
		code  int
		usage bool
		msg   string
	}{
		{"missing program", Job{Program: filepath.Join(dir, "nope"), NP: 2}, 127, false, "cannot start"},
		{"not in PATH", Job{Program: "hcclrun-no-such-program", NP: 1}, 127, false, "executable file not found"},
		{"not executable", Job{Program: notExec, NP: 1}, 126, false, "permission denied"},
		{"np 0", Job{Program: rankProg, NP: 0}, 2, true, "np must be at least 1, got 0"},
		{"np negative", Job{Program: rankProg, NP: -3}, 2, true, "np must be at least 1, got -3"},
		{"no program", Job{NP: 2}, 2, true, "no program to run"},
		{"bad -x", Job{Program: rankProg, NP: 1, Export: []string{"1BAD=x"}}, 2, true, `-x "1BAD=x": not a variable name`},
		{"negative grace", Job{Program: rankProg, NP: 1, Grace: -time.Second}, 2, true, "grace must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runJob(t, &tt.job, 10*time.Second)
			if res.err == nil || ExitCode(res.err) != tt.code || errors.Is(res.err, ErrUsage) != tt.usage || !strings.Contains(res.err.Error(), tt.msg) {
				t.Fatalf("Run: %v (exit code %d, usage %v); want code %d, usage %v, message with %q",
					res.err, ExitCode(res.err), errors.Is(res.err, ErrUsage), tt.code, tt.usage, tt.msg)
			}
		})
	}
}

// TestHostsPlacement runs a job over two hosts (both local spawners, as a
// multi-host job would have one spawner per host) and checks the identity
// each rank gets and the table it reads.
func TestHostsPlacement(t *testing.T) {
	dir := t.TempDir()
	job := &Job{
		Program: rankProg, TagOutput: true, Args: script(dir, "env", "table"),
		Hosts: []Host{
			{Spawner: NewLocalSpawner("node-a"), Addr: "127.0.0.1", Ranks: 2},
			{Spawner: NewLocalSpawner("node-b"), Addr: "127.0.0.2", Ranks: 3},
		},
	}
	res := runJob(t, job, 20*time.Second)
	noLeftovers(t, dir)
	if res.err != nil {
		t.Fatalf("Run: %v", res.err)
	}
	envs, tables := splitTagged(t, res.stdout.String(), 5)
	want := []struct{ node, local, lsize string }{{"0", "0", "2"}, {"0", "1", "2"}, {"1", "0", "3"}, {"1", "1", "3"}, {"1", "2", "3"}}
	for r, w := range want {
		e := envs[r]
		if e["HCCL_NODE_RANK"] != w.node || e["HCCL_LOCAL_RANK"] != w.local || e["LOCAL_WORLD_SIZE"] != w.lsize || e["WORLD_SIZE"] != "5" || e["TABLE_MODE"] != "0600" {
			t.Errorf("rank %d: node %s local %s/%s world %s mode %s; want %+v", r, e["HCCL_NODE_RANK"], e["HCCL_LOCAL_RANK"], e["LOCAL_WORLD_SIZE"], e["WORLD_SIZE"], e["TABLE_MODE"], w)
		}
		tab, err := ranktable.Parse([]byte(tables[r]))
		if err != nil || len(tab.Servers()) != 2 || tab.ServerList[1].HostAddr != "127.0.0.2" {
			t.Fatalf("rank %d: table %v: %s", r, err, tables[r])
		}
	}
	// Each host staged a table of its own.
	if envs[0]["HCCL_RANK_TABLE_FILE"] == envs[2]["HCCL_RANK_TABLE_FILE"] {
		t.Errorf("both hosts' ranks read %s", envs[0]["HCCL_RANK_TABLE_FILE"])
	}

	// A failure names the host the rank ran on.
	dir = t.TempDir()
	job = &Job{
		Program: rankProg, Grace: time.Second, Args: script(dir, "ready", "DIR", "await@3", "DIR", "4", "exit@3", "9", "sleep", "30s"), // rank 3 fails once all 4 run
		Hosts: []Host{
			{Spawner: NewLocalSpawner("node-a"), Ranks: 2},
			{Spawner: NewLocalSpawner("node-b"), Ranks: 2},
		},
	}
	res = runJob(t, job, 20*time.Second)
	t.Logf("second job: %v", res.err)
	noLeftovers(t, dir)
	if res.err == nil || !regexp.MustCompile(`^rank 3 \(pid \d+ on node-b\) exited with code 9; terminated 3 other ranks$`).MatchString(res.err.Error()) {
		t.Fatalf("Run: %v", res.err)
	}

	bad := &Job{Program: rankProg, NP: 3, Hosts: []Host{{Spawner: NewLocalSpawner("a"), Ranks: 2}, {Spawner: NewLocalSpawner("b"), Ranks: 2}}}
	if err := bad.Run(t.Context()); err == nil || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "np is 3 but the hosts hold 4 ranks") {
		t.Fatalf("Run with a wrong np: %v", err)
	}
}

// lateRankZero starts rank 0 only after the other ranks' starts returned,
// the order concurrent starts may take on a busy host.
type lateRankZero struct {
	*LocalSpawner
	others sync.WaitGroup
}

func (s *lateRankZero) Start(spec ProcSpec) (Process, error) {
	if spec.Rank == 0 {
		s.others.Wait()
	} else {
		defer s.others.Done()
	}
	return s.LocalSpawner.Start(spec)
}

// TestStartErrorNamesLowestRank: when no rank can be started, the error
// names rank 0 even when rank 0's start fails last.
func TestStartErrorNamesLowestRank(t *testing.T) {
	sp := &lateRankZero{LocalSpawner: NewLocalSpawner("node-a")}
	sp.others.Add(startsInFlight - 1)
	job := &Job{Program: filepath.Join(t.TempDir(), "nope"), Hosts: []Host{{Spawner: sp, Ranks: startsInFlight}}}
	res := runJob(t, job, 10*time.Second)
	var se *StartError
	if !errors.As(res.err, &se) || se.Rank != 0 {
		t.Fatalf("Run: %v; want rank 0's start error", res.err)
	}
}

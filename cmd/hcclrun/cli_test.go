package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/ranktable"
)

// TestExitCodes runs the real binary and checks the exit code and the one
// summary line on stderr.
func TestExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		flags   []string
		steps   []string
		code    int
		summary string // regexp of the whole stderr; "" means empty
	}{
		{"success", []string{"-np", "3"}, []string{"exit", "0"}, 0, ""},
		{"exit code", []string{"-np", "3", "--grace", "2s"}, []string{"exit@1", "3", "sleep", "30s"}, 3,
			`^hcclrun: rank 1 \(pid \d+ on \S+\) exited with code 3; terminated 2 other ranks\n$`},
		{"signal", []string{"-n", "4"}, []string{"kill@2", "KILL", "sleep", "30s"}, 137,
			`^hcclrun: rank 2 \(pid \d+ on \S+\) killed by SIGKILL \(signal 9\); terminated 3 other ranks\n$`},
		// The limits leave the ranks time to record their pids on a loaded
		// machine.
		{"timeout", []string{"-np", "2", "--timeout", "1500ms"}, []string{"sleep", "30s"}, 124,
			`^hcclrun: job timed out after 1.5s; terminated 2 ranks\n$`},
		{"timeout in seconds", []string{"-np", "1", "--timeout", "2"}, []string{"sleep", "30s"}, 124,
			`^hcclrun: job timed out after 2s; terminated 1 rank\n$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			res := hcclrun(t, 20*time.Second, "", rankArgs(dir, tt.flags, tt.steps...)...)
			noLeftovers(t, dir)
			if res.code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", res.code, tt.code, res.stderr)
			}
			if tt.summary == "" && res.stderr != "" || tt.summary != "" && !regexp.MustCompile(tt.summary).MatchString(res.stderr) {
				t.Fatalf("stderr %q, want %q", res.stderr, tt.summary)
			}
		})
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-np", "2", "./no-such-program"}, 127, `hcclrun: rank 0 on \S+: cannot start "./no-such-program": no such file or directory`},
		{[]string{"-np", "1", "no-such-program-in-path"}, 127, `executable file not found in \$PATH`},
		{[]string{"-np", "1", "NOTEXEC"}, 126, `permission denied`},
		{[]string{"-np", "0", "prog"}, 2, `^hcclrun: -np must be at least 1, got 0 \(see 'hcclrun --help'\)\n$`},
		// Refused before any rank is placed (it once grew to 480 MB first).
		{[]string{"-np", "99999999999", "prog"}, 2, `^hcclrun: -np 99999999999 is more than the 65536 ranks a job may have \(see 'hcclrun --help'\)\n$`},
		{[]string{"-np", "65537", "prog"}, 2, `^hcclrun: -np 65537 is more than the 65536 ranks a job may have`},
		{[]string{"-H", "localhost:2,127.0.0.2:2", "prog"}, 2, `^hcclrun: hosts localhost and 127.0.0.2 are both this machine: list it once, with the sum of their slots \(see 'hcclrun --help'\)\n$`},
		{[]string{"-H", "localhost:70000", "prog"}, 2, `^hcclrun: placement: the hosts' slots make more than the 65536 ranks a job may have \(give -np\)`},
		{[]string{"-np", "2"}, 2, `^hcclrun: missing program`},
		{[]string{"--timeout", "x", "prog"}, 2, `invalid value "x" for flag -timeout`},
	}
	notExec := t.TempDir() + "/notexec"
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			for i, a := range tt.args {
				if a == "NOTEXEC" {
					tt.args[i] = notExec
				}
			}
			res := hcclrun(t, 10*time.Second, "", tt.args...)
			if res.code != tt.code || !regexp.MustCompile(tt.msg).MatchString(res.stderr) {
				t.Fatalf("exit code %d, stderr %q; want %d, %q", res.code, res.stderr, tt.code, tt.msg)
			}
			if strings.Count(res.stderr, "\n") != 1 {
				t.Fatalf("want one line on stderr, got %q", res.stderr)
			}
		})
	}
}

// TestSignals sends real signals to the hcclrun process.
func TestSignals(t *testing.T) {
	tests := []struct {
		name    string
		np      int
		flags   []string
		steps   []string
		signals []syscall.Signal
		code    int
		within  time.Duration
		stdout  []string
	}{
		{"SIGINT forwarded", 3, []string{"-np", "3", "--grace", "20s"}, []string{"trap", "INT", "0", "ready", "DIR", "sleep", "30s"},
			[]syscall.Signal{syscall.SIGINT}, 130, 3 * time.Second, []string{"rank 0 trapped INT", "rank 1 trapped INT", "rank 2 trapped INT"}},
		{"SIGTERM forwarded", 2, []string{"-np", "2", "--grace", "20s"}, []string{"trap", "TERM", "0", "ready", "DIR", "sleep", "30s"},
			[]syscall.Signal{syscall.SIGTERM}, 143, 3 * time.Second, []string{"rank 0 trapped TERM", "rank 1 trapped TERM"}},
		{"SIGHUP forwarded", 2, []string{"-np", "2", "--grace", "20s"}, []string{"trap", "HUP", "0", "ready", "DIR", "sleep", "30s"},
			[]syscall.Signal{syscall.SIGHUP}, 129, 3 * time.Second, []string{"rank 0 trapped HUP", "rank 1 trapped HUP"}},
		{"double SIGINT kills", 3, []string{"-np", "3", "--grace", "30s"}, []string{"ignore", "INT", "ready", "DIR", "sleep", "30s"},
			[]syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130, 3 * time.Second, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd, out, errOut := command("", rankArgs(dir, tt.flags, tt.steps...)...)
			start := time.Now()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFiles(t, dir, ".ready", tt.np, 10*time.Second)
			sent := time.Now()
			for _, s := range tt.signals {
				cmd.Process.Signal(s)
				time.Sleep(200 * time.Millisecond)
			}
			res := wait(t, cmd, out, errOut, start, 20*time.Second)
			noLeftovers(t, dir)
			if d := time.Since(sent); d > tt.within {
				t.Fatalf("hcclrun took %v after the signal, want under %v", d, tt.within)
			}
			if res.code != tt.code || !strings.HasPrefix(res.stderr, "hcclrun: interrupted by SIG") {
				t.Fatalf("exit code %d, stderr %q; want %d and the interrupt summary", res.code, res.stderr, tt.code)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(res.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, res.stdout)
				}
			}
		})
	}
}

// TestKill9LeavesNoRank kills hcclrun with SIGKILL: its ranks must die with
// it (parent-death signal), even though they were started from different
// goroutines long before.
func TestKill9LeavesNoRank(t *testing.T) {
	dir := t.TempDir()
	cmd, out, errOut := command("", rankArgs(dir, []string{"-np", "4"}, "ready", "DIR", "sleep", "60s")...)
	// A killed launcher cannot remove its rank table: keep it in a
	// directory of the test's, to see the next launcher sweep it.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFiles(t, dir, ".ready", 4, 10*time.Second)
	// Let the Go runtime of hcclrun idle a little, so that a thread
	// retired in the meantime would have shown up as a dead rank.
	time.Sleep(300 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := wait(t, cmd, out, errOut, start, 10*time.Second)
	if res.code != -1 {
		t.Fatalf("hcclrun exited %d, want killed", res.code)
	}
	noLeftovers(t, dir)

	stale, _ := filepath.Glob(filepath.Join(tmp, "hcclrun-*"))
	if len(stale) != 1 {
		t.Fatalf("want the killed launcher's table directory, found %v", stale)
	}
	next := exec.Command(hcclrunBin, "-np", "1", "true")
	next.Env = cmd.Env
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("next job: %v: %s", err, out)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Fatalf("the next job did not sweep the stale table directory: %v", left)
	}
}

// TestRanksSurviveIdleLauncher: a rank started long ago must not die when the
// launcher's runtime retires threads (the Pdeathsig pitfall).
func TestRanksSurviveIdleLauncher(t *testing.T) {
	dir := t.TempDir()
	res := hcclrun(t, 20*time.Second, "", rankArgs(dir, []string{"-np", "4"}, "sleep", "1500ms", "echo", "alive")...)
	noLeftovers(t, dir)
	if res.code != 0 || strings.Count(res.stdout, "alive\n") != 4 {
		t.Fatalf("exit code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}

// TestClosedStdout: with stdout a pipe whose reader goes away (hcclrun ... |
// head -1), hcclrun takes the job down in order and exits 141 quietly,
// instead of dying of SIGPIPE with its rank table left behind.
func TestClosedStdout(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	cmd := exec.Command(hcclrunBin, rankArgs(dir, []string{"-np", "2"}, "spam", "1000000", "100")...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp) // where the rank table goes
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	cmd.Stdout, cmd.Stderr = w, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "rank ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	r.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		t.Fatal("hcclrun did not stop after its stdout closed")
	}
	noLeftovers(t, dir)
	if code := cmd.ProcessState.ExitCode(); code != 141 || errOut.String() != "" {
		t.Fatalf("exit code %d, stderr %q; want 141 and nothing", code, errOut.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
		t.Fatalf("left behind in TMPDIR: %v", left)
	}
}

func TestPassThroughTagAndStdin(t *testing.T) {
	dir := t.TempDir()
	res := hcclrun(t, 10*time.Second, "", rankArgs(dir, []string{"-np", "2"}, "args", "./train", "--lr", "0.1", "-n", "3", "--tag-output")...)
	noLeftovers(t, dir)
	want := "arg: \"./train\"\narg: \"--lr\"\narg: \"0.1\"\narg: \"-n\"\narg: \"3\"\narg: \"--tag-output\"\n"
	// Each line is whole, but the two ranks' lines may interleave.
	if res.code != 0 || !sameLines(res.stdout, want+want) {
		t.Fatalf("exit code %d, stdout %q", res.code, res.stdout)
	}

	dir = t.TempDir()
	res = hcclrun(t, 10*time.Second, "to rank zero\n", rankArgs(dir, []string{"-np", "2", "--tag-output", "-x", "GREETING=hi there"}, "cat", "env")...)
	noLeftovers(t, dir)
	if res.code != 0 {
		t.Fatalf("exit code %d, stderr %q", res.code, res.stderr)
	}
	for _, w := range []string{"[1,0]<stdout>:to rank zero\n", "[1,0]<stdout>:GREETING=hi there\n", "[1,1]<stdout>:GREETING=hi there\n", "[1,1]<stdout>:HCCL_RANK=1\n"} {
		if !strings.Contains(res.stdout, w) {
			t.Errorf("stdout lacks %q", w)
		}
	}
	if strings.Contains(res.stdout, "[1,1]<stdout>:to rank zero") {
		t.Errorf("rank 1 read stdin")
	}
	for _, line := range strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n") {
		if !regexp.MustCompile(`^\[1,[01]\]<stdout>:`).MatchString(line) {
			t.Fatalf("untagged line %q", line)
		}
	}
}

func TestRanktableCommand(t *testing.T) {
	res := hcclrun(t, 10*time.Second, "", "ranktable", "-np", "4")
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("exit code %d, stderr %q", res.code, res.stderr)
	}
	tab, err := ranktable.Parse([]byte(res.stdout))
	if err != nil {
		t.Fatalf("printed table does not parse: %v\n%s", err, res.stdout)
	}
	if err := tab.Validate(); err != nil || tab.Size() != 4 || len(tab.Servers()) != 1 {
		t.Fatalf("printed table: %v, size %d", err, tab.Size())
	}
	// Two ranks or more: the launcher times a shared core's hand-off for
	// the ranks' cost model (ranks beyond the cores wait for it, messages
	// over TCP pay its like); one rank talks to nobody.
	if tab.Handoff() <= 0 {
		t.Errorf("4 ranks: handoff_ns %q, want a measured hand-off", tab.HandoffNS)
	}
	one := hcclrun(t, 10*time.Second, "", "ranktable", "-np", "1")
	if tab1, err := ranktable.Parse([]byte(one.stdout)); err != nil {
		t.Errorf("1 rank: printed table does not parse: %v", err)
	} else if tab1.HandoffNS != "" {
		t.Errorf("1 rank: handoff_ns %q, want none", tab1.HandoffNS)
	}
	var raw map[string]any
	if json.Unmarshal([]byte(res.stdout), &raw) != nil || raw["version"] != "1.0" || raw["status"] != "completed" {
		t.Fatalf("not HCCL v1.0 JSON: %s", res.stdout)
	}

	// The printed table passes --check.
	f := t.TempDir() + "/t.json"
	if err := os.WriteFile(f, []byte(res.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		out  string // stdout
		err  string // regexp of stderr
	}{
		{[]string{"--check", f}, 0, "ok\n", `^$`},
		{[]string{"--check", "testdata/hccl_1x2.json"}, 0, "ok\n", `^$`},
		{[]string{"--check", "testdata/bad_rank_id.json"}, 1, "", `^hcclrun: testdata/bad_rank_id.json: server_list\[0\]\.device\[1\]\.rank_id: "x7" is not a decimal number\n$`},
		{[]string{"--check", "testdata/bad_version.json"}, 1, "", `version: "1.2" is not supported`},
		{[]string{"--check", "testdata/bad_count.json"}, 1, "", `server_count: "2" does not match`},
		{[]string{"--check", "testdata/truncated.json"}, 1, "", `malformed JSON`},
		{[]string{"--check", "testdata/none.json"}, 1, "", `no such file or directory`},
		{[]string{"--check"}, 2, "", `flag needs an argument`},
		{[]string{"-np", "0"}, 2, "", `np must be at least 1, got 0`},
		{[]string{"-np", "70000"}, 2, "", `^hcclrun: np is 70000, more than the 65536 ranks a job may have`},
		{[]string{"--check", "BIG"}, 1, "", `big.json: 67108865 bytes, more than the 64 MiB a rank table may have\n$`},
		{[]string{"--check", "HUGE"}, 1, "", `huge.json: server_list: holds 300000 ranks, more than the 65536 a job may have\n$`},
		{nil, 2, "", `missing -np`},
		{[]string{"-np", "2", "--check", f}, 2, "", `not both`},
		{[]string{"-np", "2", "extra"}, 2, "", `unexpected argument "extra"`},
	}
	big, huge := bigTables(t)
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			for i, a := range tt.args {
				switch a {
				case "BIG":
					tt.args[i] = big
				case "HUGE":
					tt.args[i] = huge
				}
			}
			res := hcclrun(t, 10*time.Second, "", append([]string{"ranktable"}, tt.args...)...)
			if res.code != tt.code || res.stdout != tt.out || !regexp.MustCompile(tt.err).MatchString(res.stderr) {
				t.Fatalf("exit code %d, stdout %q, stderr %q; want %d, %q, %q", res.code, res.stdout, res.stderr, tt.code, tt.out, tt.err)
			}
		})
	}
}

// bigTables writes a sparse file just over ranktable.MaxFileBytes and a
// valid-looking table of 300000 ranks (a few MiB), which --check must both
// refuse.
func bigTables(t *testing.T) (big, huge string) {
	dir := t.TempDir()
	big = filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, ranktable.MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"status":"completed","version":"1.0","server_count":"1","server_list":[{"server_id":"h","device":[`)
	for r := range 300000 {
		if r > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"device_id":"%d","rank_id":"%d"}`, r, r)
	}
	b.WriteString("]}]}\n")
	huge = filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return big, huge
}

// TestTagOutputThroughPipe runs the real binary with stdout and stderr on
// one pipe, 4 ranks printing short lines and lines far longer than the pipe
// buffer: every line must come out whole and tagged with its own rank.
func TestTagOutputThroughPipe(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(hcclrunBin, rankArgs(dir, []string{"-np", "4", "--tag-output"}, "spam", "3000", "120", "spam", "6", "250000")...)
	var both strings.Builder
	cmd.Stdout = &both
	cmd.Stderr = cmd.Stdout // one pipe, as 2>&1
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	res := wait(t, cmd, nil, nil, start, 60*time.Second)
	noLeftovers(t, dir)
	if res.code != 0 {
		t.Fatalf("exit code %d:\n%.2000s", res.code, both.String())
	}
	counts := make(map[string]int)
	tagged := regexp.MustCompile(`^\[1,(\d)\]<stdout>:rank (\d) line (\d+) ([a-z]*)$`)
	for n, line := range strings.Split(strings.TrimSuffix(both.String(), "\n"), "\n") {
		m := tagged.FindStringSubmatch(line)
		if m == nil || m[1] != m[2] {
			t.Fatalf("line %d damaged or mistagged: %.100q", n, line)
		}
		body := line[len("[1,0]<stdout>:"):]
		if len(body) != 119 && len(body) != 249999 {
			t.Fatalf("line %d has %d bytes: %.100q", n, len(body), line)
		}
		counts[m[1]]++
	}
	for _, r := range []string{"0", "1", "2", "3"} {
		if counts[r] != 3006 {
			t.Fatalf("rank %s: %d lines, want 3006", r, counts[r])
		}
	}
}

// sameLines tells whether a and b hold the same lines, in any order.
func sameLines(a, b string) bool {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

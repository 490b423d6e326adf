package multihost

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	"github.com/hcclrun/hcclrun/internal/testhosts"
	"github.com/hcclrun/hcclrun/internal/testprog"
)

// bin is the directory of the built binaries, shared by every test.
var (
	buildOnce sync.Once
	bin       string
	buildErr  error
)

// binaries builds hcclrun, the examples and the collective check once.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hcclrun-multihost-")
		if err != nil {
			buildErr = err
			return
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		_, buildErr = testprog.Build(dir, "cmd/hcclrun", "examples/allreduce", "examples/alltoallv", "examples/train",
			"test/progs/collcheck")
		bin = dir
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bin != "" {
		os.RemoveAll(bin)
	}
	os.Exit(code)
}

// setup requires the harness and returns it, the binaries and a hostfile
// of its first three hosts, two slots each (Open MPI format).
func setup(t *testing.T) (*testhosts.Env, string, string) {
	t.Helper()
	e := testhosts.Require(t, 3)
	b := binaries(t)
	hf := filepath.Join(t.TempDir(), "hostfile")
	var lines []string
	lines = append(lines, "# three simulated hosts, two ranks each")
	for _, n := range e.Names[:3] {
		lines = append(lines, n+" slots=2")
	}
	if err := os.WriteFile(hf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return e, b, hf
}

// result is one finished hcclrun.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// hcclrun runs the built hcclrun by absolute path with args, bounded by
// deadline.
func hcclrun(t *testing.T, b string, deadline time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(b, "hcclrun"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("hcclrun %s: still running after %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), deadline, r.stdout, r.stderr)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustRun(t *testing.T, b string, args ...string) string {
	t.Helper()
	r := hcclrun(t, b, 2*time.Minute, args...)
	if r.code != 0 {
		t.Fatalf("hcclrun %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// hostArgs reach the harness's hosts: its ssh config maps h1.. to their
// addresses, user, key and known_hosts.
func hostArgs(e *testhosts.Env, hostfile string) []string {
	return []string{"--hostfile", hostfile, "--ssh-config", e.SSHConfig}
}

var okLine = regexp.MustCompile(`(?m)^rank (\d+)/6 ok host=(\S+) local=(\d)/2$`)

// TestSixRanksThreeHosts: the collective check, and the examples, on 6
// ranks from a hostfile, 2 per host, each rank on the host the map says.
func TestSixRanksThreeHosts(t *testing.T) {
	e, b, hf := setup(t)
	t.Run("collcheck", func(t *testing.T) {
		out := mustRun(t, b, append(hostArgs(e, hf), filepath.Join(b, "collcheck"))...)
		ms := okLine.FindAllStringSubmatch(out, -1)
		if len(ms) != 6 {
			t.Fatalf("%d ranks report ok, want 6:\n%s", len(ms), out)
		}
		for _, m := range ms {
			r, _ := strconv.Atoi(m[1])
			if want := e.Names[r/2]; m[2] != want || m[3] != strconv.Itoa(r%2) {
				t.Errorf("rank %d ran on %s as local rank %s, want %s local %d", r, m[2], m[3], want, r%2)
			}
		}
	})
	for _, tr := range []struct{ name, env string }{{"split", ""}, {"split over tcp", "HCCL_SHM_DISABLE=1"}} {
		t.Run(tr.name, func(t *testing.T) {
			// A 2x3 grid: rows span two hosts, columns two (ranks r and
			// r+3); over TCP the ranks of a host talk TCP too.
			args := hostArgs(e, hf)
			if tr.env != "" {
				args = append(args, "-x", tr.env)
			}
			out := mustRun(t, b, append(args, filepath.Join(b, "collcheck"), "-split", "3")...)
			for r := range 6 {
				want := fmt.Sprintf("rank %d split ok row=%d/3 col=%d/2", r, r%3, r/3)
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
	t.Run("ssh-port and -H", func(t *testing.T) {
		if e.AltPort == 0 {
			t.Skip("the harness has no second ssh port")
		}
		hosts := strings.Join([]string{e.Names[0] + ":1", e.Names[1] + ":1"}, ",")
		out := mustRun(t, b, "-H", hosts, "--ssh-config", e.SSHConfig, "--ssh-port", strconv.Itoa(e.AltPort), filepath.Join(b, "collcheck"), "-count", "10")
		if n := len(regexp.MustCompile(`(?m)^rank \d/2 ok`).FindAllString(out, -1)); n != 2 {
			t.Fatalf("%d ranks ok, want 2:\n%s", n, out)
		}
	})
	t.Run("allreduce", func(t *testing.T) {
		out := mustRun(t, b, append(hostArgs(e, hf), filepath.Join(b, "allreduce"))...)
		if n := strings.Count(out, "sum = 21"); n != 6 {
			t.Fatalf("%d ranks print sum = 21, want 6:\n%s", n, out)
		}
	})
	t.Run("alltoallv", func(t *testing.T) {
		out := mustRun(t, b, append(hostArgs(e, hf), filepath.Join(b, "alltoallv"))...)
		for r := range 6 {
			for _, want := range []string{
				fmt.Sprintf("rank %d: [0 1 2 3 4 5]", r),
				fmt.Sprintf("rank %d uneven: [0 1 1 2 2 2 3 3 3 3 4 4 4 4 4 5 5 5 5 5 5]", r),
			} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		}
	})
	t.Run("train", func(t *testing.T) {
		one := trainResult(t, mustRun(t, b, "-np", "1", filepath.Join(b, "train"), "-epochs", "5"))
		six := trainResult(t, mustRun(t, b, append(hostArgs(e, hf), filepath.Join(b, "train"), "-epochs", "5")...))
		if len(one) != 6 || len(six) != 6 {
			t.Fatalf("np 1 printed %v, np 6 %v: want 5 losses and a checksum each", one, six)
		}
		for i := range one {
			if d := one[i] - six[i]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("np 1 printed %v, np 6 on 3 hosts %v: differ by more than 1e-5", one, six)
			}
		}
	})
	t.Run("this machine in the hostfile runs locally", func(t *testing.T) {
		mixed := filepath.Join(t.TempDir(), "hostfile")
		os.WriteFile(mixed, []byte("localhost slots=2\n"+e.Names[0]+":2\n"+e.Names[1]+":2\n"), 0o644)
		out := mustRun(t, b, "--hostfile", mixed, "--ssh-config", e.SSHConfig, filepath.Join(b, "collcheck"))
		self, _ := os.Hostname()
		ms := okLine.FindAllStringSubmatch(out, -1)
		if len(ms) != 6 {
			t.Fatalf("%d ranks report ok, want 6:\n%s", len(ms), out)
		}
		for _, m := range ms {
			r, _ := strconv.Atoi(m[1])
			want := map[int]string{0: self, 1: e.Names[0], 2: e.Names[1]}[r/2]
			if m[2] != want {
				t.Errorf("rank %d ran on %s, want %s", r, m[2], want)
			}
		}
	})
}

var trainNumber = regexp.MustCompile(`(?m)^(?:epoch \d+ loss|checksum) (-?[0-9.]+)$`)

func trainResult(t *testing.T, out string) []float64 {
	var vals []float64
	for _, m := range trainNumber.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, v)
	}
	return vals
}

// TestTopoThreeHosts: hcclrun topo with the hostfile sees 3 servers, shm
// between the two ranks of a host and tcp between hosts.
func TestTopoThreeHosts(t *testing.T) {
	e, b, hf := setup(t)
	out := mustRun(t, b, append([]string{"topo"}, hostArgs(e, hf)...)...)
	if !strings.Contains(out, "6 ranks on 3 servers") {
		t.Fatalf("topo output lacks 6 ranks on 3 servers:\n%s", out)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 7 && regexp.MustCompile(`^r\d$`).MatchString(f[0]) {
			rows[f[0]] = strings.Join(f[1:7], " ")
		}
	}
	for r := range 6 {
		var want []string
		for q := range 6 {
			switch {
			case q == r:
				want = append(want, "X")
			case q/2 == r/2:
				want = append(want, "shm")
			default:
				want = append(want, "tcp")
			}
		}
		if got := rows[fmt.Sprintf("r%d", r)]; got != strings.Join(want, " ") {
			t.Errorf("row r%d: %q, want %q\n%s", r, got, strings.Join(want, " "), out)
		}
	}
}

// startJob starts hcclrun in the background with its output captured and
// waits until every rank of the collective check reported ok.
func startJob(t *testing.T, b string, args ...string) (*exec.Cmd, *syncbuf.Buffer, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(filepath.Join(b, "hcclrun"), args...)
	out, errb := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	for deadline := time.Now().Add(time.Minute); len(okLine.FindAllString(out.String(), -1)) < 6; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job did not get going:\nstdout:\n%s\nstderr:\n%s", out, errb)
		}
	}
	return cmd, out, errb
}

// waitExit waits for cmd, at most limit, and returns its exit code and how
// long it took.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, errb *syncbuf.Buffer) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, time.Since(start)
	case <-time.After(limit):
		t.Fatalf("hcclrun still running %v after the fault; stderr:\n%s", limit, errb)
		return 0, 0
	}
}

// jobProcs lists the processes on host name that belong to the job: their
// command line names the binaries' directory (the agent and the ranks).
// sshd's own session processes do not count; zombies are dead.
func jobProcs(t *testing.T, e *testhosts.Env, name, b string) []string {
	t.Helper()
	var left []string
	for _, p := range e.Pids(t, name) {
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if err != nil {
			continue // gone meanwhile
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		if bytes.Contains(cmdline, []byte(b)) {
			left = append(left, fmt.Sprintf("%d %s", p, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return left
}

// noJobProcs waits up to limit for every host to be free of the job's
// processes: an agent whose launcher was cut off notices within its
// silence timeout and kills its ranks.
func noJobProcs(t *testing.T, e *testhosts.Env, b string, limit time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		var left []string
		for _, n := range e.Names[:3] {
			for _, p := range jobProcs(t, e, n, b) {
				left = append(left, n+": "+p)
			}
		}
		if len(left) == 0 {
			t.Logf("no process of the job on any host %v after hcclrun exited", time.Since(start).Round(10*time.Millisecond))
			return
		}
		if time.Since(start) > limit {
			t.Fatalf("processes of the job survive %v after hcclrun exited:\n%s", limit, strings.Join(left, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHostFailures: crash or cut one host in the middle of a job; hcclrun
// exits non-zero within 15 s naming the host and its ranks, and nothing of
// the job survives anywhere.
func TestHostFailures(t *testing.T) {
	tests := []struct {
		name  string
		fault func(e *testhosts.Env, t *testing.T, host string)
	}{
		{"crash", func(e *testhosts.Env, t *testing.T, h string) { e.Crash(t, h) }},
		{"cut", func(e *testhosts.Env, t *testing.T, h string) { e.Cut(t, h, false) }},
		{"silent cut", func(e *testhosts.Env, t *testing.T, h string) { e.Cut(t, h, true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, b, hf := setup(t)
			victim := e.Names[1] // ranks 2-3
			cmd, _, errb := startJob(t, b, append(hostArgs(e, hf), filepath.Join(b, "collcheck"), "-hold", "2m")...)
			procs := jobProcs(t, e, victim, b)
			if len(procs) != 3 {
				t.Fatalf("%s runs %d processes of the job, want the agent and 2 ranks: %v", victim, len(procs), procs)
			}
			// The job key reaches the agent on stdin: no command line
			// carries it (ps shows command lines to every user).
			agents := 0
			for _, p := range procs {
				if strings.HasSuffix(p, " "+b+"/hcclrun agent ") {
					agents++
				}
				if strings.Contains(p, "KEY") {
					t.Errorf("a command line shows a key: %s", p)
				}
			}
			if agents != 1 {
				t.Errorf("want one agent on %s, running as %s/hcclrun agent: %v", victim, b, procs)
			}
			faultAt := time.Now()
			tt.fault(e, t, victim)
			code, _ := waitExit(t, cmd, 15*time.Second-time.Since(faultAt), errb)
			took := time.Since(faultAt)
			summary := errb.String()
			t.Logf("hcclrun exited %d, %v after the %s: %s", code, took.Round(10*time.Millisecond), tt.name, lastLine(summary))
			if code == 0 {
				t.Fatalf("hcclrun exited 0 after the %s", tt.name)
			}
			if want := fmt.Sprintf("host %s (ranks 2-3) lost", victim); !strings.Contains(lastLine(summary), want) {
				t.Errorf("summary %q does not say %q", lastLine(summary), want)
			}
			noJobProcs(t, e, b, 10*time.Second)
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestSSHRefused: a host key that known_hosts lacks, a user the hosts
// refuse, a key they do not know: hcclrun fails with an error naming the
// host and the fix, and starts nothing anywhere (the agent is a wrapper
// that would leave a mark, given with --prefix).
func TestSSHRefused(t *testing.T) {
	e, b, hf := setup(t)
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	os.Mkdir(marks, 0o755)
	prefix := filepath.Join(dir, "prefix")
	os.MkdirAll(filepath.Join(prefix, "bin"), 0o755)
	wrapper := fmt.Sprintf("#!/bin/sh\ntouch %s/agent-$(hostname)\nexec %s/hcclrun \"$@\"\n", marks, b)
	if err := os.WriteFile(filepath.Join(prefix, "bin", "hcclrun"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	// known_hosts without the second host's keys.
	kh, err := os.ReadFile(e.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(kh), "\n") {
		if l != "" && !strings.HasPrefix(l, e.Names[1]+",") && !strings.HasPrefix(l, "["+e.Names[1]+"]") {
			keep = append(keep, l)
		}
	}
	partial := filepath.Join(dir, "known_hosts")
	os.WriteFile(partial, []byte(strings.Join(keep, "\n")+"\n"), 0o644)
	// A key no host authorizes.
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := xssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	stranger := filepath.Join(dir, "stranger")
	os.WriteFile(stranger, pem.EncodeToMemory(blk), 0o600)

	base := append(hostArgs(e, hf), "--prefix", prefix)
	tests := []struct {
		name  string
		extra []string
		want  []string
	}{
		{"unknown host key", []string{"--ssh-known-hosts", partial},
			[]string{"@" + e.Names[1], "host key unknown", "known_hosts (" + partial + ")", "--ssh-accept-new"}},
		{"wrong user", []string{"--ssh-user", "nobody"},
			[]string{"nobody@" + e.Names[0], "authentication failed", `refused user "nobody"`}},
		{"wrong key", []string{"--ssh-identity", stranger},
			[]string{"root@" + e.Names[2], "authentication failed", stranger}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append(slices.Clone(base), tt.extra...), filepath.Join(b, "collcheck"))
			r := hcclrun(t, b, time.Minute, args...)
			t.Logf("exit %d in %v: %s", r.code, r.elapsed.Round(time.Millisecond), r.stderr)
			if r.code == 0 {
				t.Fatalf("hcclrun succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("error lacks %q:\n%s", w, r.stderr)
				}
			}
			if !strings.Contains(r.stderr, "nothing was started") || r.stdout != "" {
				t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
			}
			if m, _ := os.ReadDir(marks); len(m) != 0 {
				t.Fatalf("agents were started: %v", m)
			}
		})
	}
	// The control: the same wrapper does leave its marks when all is well,
	// and --ssh-accept-new adds the missing keys.
	t.Run("accept-new", func(t *testing.T) {
		args := append(append(slices.Clone(base), "--ssh-known-hosts", partial, "--ssh-accept-new"), filepath.Join(b, "collcheck"), "-count", "10")
		if out := mustRun(t, b, args...); len(okLine.FindAllString(out, -1)) != 6 {
			t.Fatalf("output:\n%s", out)
		}
		m, _ := os.ReadDir(marks)
		if len(m) != 3 {
			t.Fatalf("marks %v, want one per host", m)
		}
		after, _ := os.ReadFile(partial)
		if len(strings.Split(strings.TrimSpace(string(after)), "\n")) != len(keep)+1 {
			t.Fatalf("known_hosts after accept-new:\n%s", after)
		}
	})
}

var stampLine = regexp.MustCompile(`(?m)^rank (\d+) init-done (\d+)$`)

// TestLaunchTime measures the launch of the 6-rank 3-host job: from just
// before hcclrun is started until the last rank is past Init (each rank
// prints the wall clock when Init returned; the simulated hosts share this
// machine's clock). It logs min, median and max of several runs, and the
// same for 6 ranks on this machine alone for comparison.
func TestLaunchTime(t *testing.T) {
	e, b, hf := setup(t)
	measure := func(args ...string) []time.Duration {
		var ds []time.Duration
		for range 5 {
			start := time.Now()
			out := mustRun(t, b, append(args, filepath.Join(b, "collcheck"), "-init-stamp", "-count", "1")...)
			ms := stampLine.FindAllStringSubmatch(out, -1)
			if len(ms) != 6 {
				t.Fatalf("%d init stamps, want 6:\n%s", len(ms), out)
			}
			var last int64
			for _, m := range ms {
				ns, _ := strconv.ParseInt(m[2], 10, 64)
				last = max(last, ns)
			}
			ds = append(ds, time.Unix(0, last).Sub(start))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds
	}
	multi := measure(hostArgs(e, hf)...)
	local := measure("-np", "6")
	t.Logf("launch to all 6 ranks past Init, 3 hosts over ssh: min %v median %v max %v", multi[0].Round(time.Millisecond), multi[2].Round(time.Millisecond), multi[4].Round(time.Millisecond))
	t.Logf("launch to all 6 ranks past Init, this machine:     min %v median %v max %v", local[0].Round(time.Millisecond), local[2].Round(time.Millisecond), local[4].Round(time.Millisecond))
	// Where the multi-host time goes, from --verbose: the parallel ssh
	// dials, then the agents (session, exec, handshake), counted from the
	// start of the dials.
	phase := regexp.MustCompile(`msg="(ssh connections|agents started)" hosts=3 took=(\S+)`)
	for range 2 {
		r := hcclrun(t, b, time.Minute, append(append([]string{"-v"}, hostArgs(e, hf)...), filepath.Join(b, "collcheck"), "-count", "1")...)
		var got []string
		for _, m := range phase.FindAllStringSubmatch(r.stderr, -1) {
			got = append(got, m[1]+" after "+m[2])
		}
		t.Logf("phases: %s", strings.Join(got, ", "))
	}
	if multi[2] > 10*time.Second {
		t.Errorf("median launch %v: more than 10 s", multi[2])
	}
}

// TestLauncherGone: SIGTERM to hcclrun is forwarded to every rank on every
// host (exit 128+15); SIGKILL of hcclrun, which runs no code, still leaves
// nothing behind, because each agent sees its stdin end and kills its ranks.
func TestLauncherGone(t *testing.T) {
	tests := []struct {
		name string
		sig  syscall.Signal
		code int
	}{
		{"SIGTERM forwarded", syscall.SIGTERM, 128 + 15},
		{"SIGKILL", syscall.SIGKILL, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, b, hf := setup(t)
			cmd, _, errb := startJob(t, b, append(hostArgs(e, hf), filepath.Join(b, "collcheck"), "-hold", "2m")...)
			for _, n := range e.Names[:3] {
				if procs := jobProcs(t, e, n, b); len(procs) != 3 {
					t.Fatalf("%s runs %d processes of the job, want the agent and 2 ranks: %v", n, len(procs), procs)
				}
			}
			cmd.Process.Signal(tt.sig)
			code, took := waitExit(t, cmd, 15*time.Second, errb)
			t.Logf("hcclrun exited %d after %v: %s", code, took.Round(10*time.Millisecond), lastLine(errb.String()))
			if code != tt.code {
				t.Errorf("exit code %d, want %d", code, tt.code)
			}
			noJobProcs(t, e, b, 10*time.Second)
		})
	}
}

// TestStartFailures: an agent or a program missing on the hosts is an
// error that says so, with the shell's exit code for a missing program.
func TestStartFailures(t *testing.T) {
	e, b, hf := setup(t)
	nowhere := filepath.Join(t.TempDir(), "nowhere")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"agent missing", append(hostArgs(e, hf), "--prefix", nowhere, filepath.Join(b, "collcheck")), 1,
			"hcclrun must be installed as " + nowhere + "/bin/hcclrun on every host"},
		{"program missing", append(hostArgs(e, hf), filepath.Join(nowhere, "prog")), 127,
			`: cannot start "` + nowhere + `/prog": no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := hcclrun(t, b, time.Minute, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d; stderr lacks %q:\n%s", r.code, tt.code, tt.want, r.stderr)
			}
			noJobProcs(t, e, b, 10*time.Second)
		})
	}
}

package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	"github.com/hcclrun/hcclrun/internal/testprog"
	"github.com/hcclrun/hcclrun/internal/testslurm"
)

var (
	buildOnce sync.Once
	bin       string
	buildErr  error
)

// binaries builds hcclrun and the collective check once, into a directory
// the nodes reach by the same path (they share this machine's filesystem).
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hcclrun-slurm-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			buildErr = err
			return
		}
		_, buildErr = testprog.Build(dir, "cmd/hcclrun", "test/progs/collcheck")
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

func setup(t *testing.T) (*testslurm.Env, string) {
	t.Helper()
	e := testslurm.Require(t, 3)
	return e, binaries(t)
}

var okLine = regexp.MustCompile(`(?m)^rank (\d+)/(\d+) ok host=(\S+) local=(\d+)/(\d+)$`)

// checkOK wants one ok line per rank of n, rank r on hosts[r] with the
// local rank and size given.
func checkOK(t *testing.T, out string, hosts []string, local [][2]int) {
	t.Helper()
	seen := map[int]bool{}
	for _, m := range okLine.FindAllStringSubmatch(out, -1) {
		r, _ := strconv.Atoi(m[1])
		if m[2] != strconv.Itoa(len(hosts)) || r >= len(hosts) {
			t.Errorf("line %q: want size %d", m[0], len(hosts))
			continue
		}
		want := fmt.Sprintf("rank %d/%d ok host=%s local=%d/%d", r, len(hosts), hosts[r], local[r][0], local[r][1])
		if m[0] != want {
			t.Errorf("got %q, want %q", m[0], want)
		}
		seen[r] = true
	}
	if len(seen) != len(hosts) {
		t.Errorf("%d ranks ok, want %d; output:\n%s", len(seen), len(hosts), out)
	}
}

// sixOnThree is where 6 ranks, 2 per node, run: block placement.
var (
	sixHosts = []string{"h1", "h1", "h2", "h2", "h3", "h3"}
	sixLocal = [][2]int{{0, 2}, {1, 2}, {0, 2}, {1, 2}, {0, 2}, {1, 2}}
)

func run(t *testing.T, e *testslurm.Env, deadline time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	cmd := e.Cmd(ctx, name, args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %s: still running after %v:\n%s", name, strings.Join(args, " "), deadline, out)
	}
	return string(out), err
}

// TestSallocHcclrun: hcclrun inside an allocation places the ranks on its
// nodes (-np from SLURM_NTASKS), starts the agents with srun (the ranks
// run inside a Slurm step), and the collective check passes.
func TestSallocHcclrun(t *testing.T) {
	e, b := setup(t)
	hcclrun, collcheck := filepath.Join(b, "hcclrun"), filepath.Join(b, "collcheck")
	out, err := run(t, e, 2*time.Minute, "salloc", "-N", "3", "--ntasks-per-node=2", hcclrun, collcheck)
	if err != nil {
		t.Fatalf("salloc hcclrun: %v\n%s", err, out)
	}
	checkOK(t, out, sixHosts, sixLocal)
	// -np given, and the ranks' environment: inside the agents' step.
	out, err = run(t, e, 2*time.Minute, "salloc", "-N", "3", "-n", "6", hcclrun, "-np", "6", "/bin/sh", "-c",
		`echo "rank=$HCCL_RANK host=$(hostname) step=$SLURM_STEP_ID key=${#HCCL_JOB_KEY}"`)
	if err != nil {
		t.Fatalf("salloc hcclrun sh: %v\n%s", err, out)
	}
	for r, h := range sixHosts {
		want := regexp.MustCompile(fmt.Sprintf(`(?m)^rank=%d host=%s step=\d+ key=64$`, r, h))
		if !want.MatchString(out) {
			t.Errorf("no %v in\n%s", want, out)
		}
	}
	// sbatch, as the README shows it.
	dir := t.TempDir()
	script := filepath.Join(dir, "job.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n#SBATCH -N 3\n#SBATCH --ntasks-per-node=2\nexec "+hcclrun+" "+collcheck+" -count 1001\n"), 0o755)
	out, err = run(t, e, 2*time.Minute, "sbatch", "--wait", "-o", filepath.Join(dir, "out"), script)
	got, _ := os.ReadFile(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatalf("sbatch --wait: %v\n%s\n%s", err, out, got)
	}
	checkOK(t, string(got), sixHosts, sixLocal)
}

// TestSrunPMI2: the collective check started by srun alone, no hcclrun:
// block and cyclic placement, an odd rank count, a single rank.
func TestSrunPMI2(t *testing.T) {
	e, b := setup(t)
	collcheck := filepath.Join(b, "collcheck")
	for _, tc := range []struct {
		name  string
		args  []string
		hosts []string
		local [][2]int
	}{
		{"block", []string{"-N", "3", "-n", "6"}, sixHosts, sixLocal},
		{"cyclic", []string{"-N", "3", "-n", "5", "-m", "cyclic"}, []string{"h1", "h2", "h3", "h1", "h2"},
			[][2]int{{0, 2}, {0, 2}, {0, 1}, {1, 2}, {1, 2}}},
		{"one", []string{"-N", "1", "-n", "1"}, []string{"h1"}, [][2]int{{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"--mpi=pmi2"}, tc.args...), collcheck, "-count", "1001")
			out, err := run(t, e, 2*time.Minute, "srun", args...)
			if err != nil {
				t.Fatalf("srun: %v\n%s", err, out)
			}
			checkOK(t, out, tc.hosts, tc.local)
		})
	}
	// Without a PMI plugin the program says what to do, and fails.
	out, err := run(t, e, time.Minute, "srun", "--mpi=none", "-N", "1", "-n", "1", collcheck)
	if err == nil || !strings.Contains(out, "srun --mpi=pmi2") {
		t.Fatalf("srun --mpi=none: %v\n%s", err, out)
	}
}

// job is a running Slurm command whose output the test watches.
type job struct {
	cmd   *exec.Cmd
	out   syncbuf.Buffer
	done  chan struct{}
	err   error
	start time.Time
}

func startJob(t *testing.T, e *testslurm.Env, name string, args ...string) *job {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	j := &job{done: make(chan struct{})}
	j.cmd = e.Cmd(ctx, name, args...)
	j.cmd.Dir = t.TempDir()
	j.cmd.Stdout, j.cmd.Stderr = &j.out, &j.out
	j.start = time.Now()
	if err := j.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() { j.err = j.cmd.Wait(); cancel(); close(j.done) }()
	t.Cleanup(func() {
		select {
		case <-j.done:
		default:
			j.cmd.Process.Kill()
			<-j.done
		}
	})
	return j
}

// waitOK waits until n ranks have said ok.
func (j *job) waitOK(t *testing.T, n int) {
	t.Helper()
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if len(okLine.FindAllString(j.out.String(), -1)) >= n {
			return
		}
		select {
		case <-j.done:
			t.Fatalf("ended before %d ranks were ok: %v\n%s", n, j.err, j.out.String())
		default:
		}
	}
	t.Fatalf("%d ranks not ok after 2 minutes:\n%s", n, j.out.String())
}

// wait waits for the end, at most d, and returns how long it took from
// since.
func (j *job) wait(t *testing.T, d time.Duration, since time.Time) time.Duration {
	t.Helper()
	select {
	case <-j.done:
		return time.Since(since)
	case <-time.After(d):
		t.Fatalf("still running %v after the fault:\n%s", d, j.out.String())
	}
	return 0
}

// procs lists the processes (root namespace PIDs) running a binary of dir,
// with the environment variable name=value when name is not empty.
func procs(dir, name, value string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || filepath.Dir(exe) != dir {
			continue
		}
		if name != "" {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+name+"="+value+"\x00")) {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// noneLeft waits until no process of the test's binaries is left on any
// node (the hosts' PID namespaces are inside this one).
func noneLeft(t *testing.T, b string, d time.Duration) {
	t.Helper()
	var left []int
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if left = procs(b, "", ""); len(left) == 0 {
			return
		}
	}
	var desc []string
	for _, p := range left {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		desc = append(desc, fmt.Sprintf("%d %s", p, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	t.Fatalf("processes left %v after the job: %s", d, strings.Join(desc, "; "))
}

func killRank(t *testing.T, b, envName string, rank int) {
	t.Helper()
	pids := procs(b, envName, strconv.Itoa(rank))
	if len(pids) != 1 {
		t.Fatalf("rank %d: processes %v, want one", rank, pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// TestRankKilled: a rank killed in the middle of the job ends it fast,
// named, under hcclrun and under srun alone (whose --kill-on-bad-exit is
// off here: the runtime's own abort ends the others), nothing left.
func TestRankKilled(t *testing.T) {
	e, b := setup(t)
	hcclrun, collcheck := filepath.Join(b, "hcclrun"), filepath.Join(b, "collcheck")
	srun := []string{"srun", "--mpi=pmi2", "--kill-on-bad-exit=0", "-N", "3", "-n", "6", collcheck, "-hold", "2m"}
	for _, tc := range []struct {
		name, env string
		rank      int
		cmd       []string
		want      string
	}{
		{"hcclrun", "HCCL_RANK", 3, []string{"salloc", "-N", "3", "--ntasks-per-node=2", hcclrun, collcheck, "-hold", "2m"},
			`rank 3 \(pid \d+ on h2\) killed by SIGKILL`},
		{"srun", "PMI_RANK", 3, srun, `job aborted: rank 3 lost`},
		// rank 0 serves the control plane: the others say so
		{"srun-rank0", "PMI_RANK", 0, srun, `(?m)^rank 5: .*lost the control plane \(rank 0's\)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := startJob(t, e, tc.cmd[0], tc.cmd[1:]...)
			j.waitOK(t, 6)
			killed := time.Now()
			killRank(t, b, tc.env, tc.rank)
			took := j.wait(t, 30*time.Second, killed)
			t.Logf("job ended %v after the kill", took.Round(time.Millisecond))
			if j.err == nil || !regexp.MustCompile(tc.want).MatchString(j.out.String()) {
				t.Fatalf("exit %v; want a failure matching %q:\n%s", j.err, tc.want, j.out.String())
			}
			noneLeft(t, b, 15*time.Second)
		})
	}
}

// TestNodeLost: every process of the job on h2 dies at once with that
// node's slurmd and slurmstepd (a node lost, without cutting the shared
// host down): hcclrun names the host and its ranks and ends the job.
func TestNodeLost(t *testing.T) {
	e, b := setup(t)
	hcclrun, collcheck := filepath.Join(b, "hcclrun"), filepath.Join(b, "collcheck")
	t.Cleanup(func() { exec.Command(e.Script, "up").Run() }) // h2's slurmd back
	j := startJob(t, e, "salloc", "-N", "3", "--ntasks-per-node=2", hcclrun, collcheck, "-hold", "2m")
	j.waitOK(t, 6)
	out, err := exec.Command(e.Hosts.Script, "pids", "h2").Output()
	if err != nil {
		t.Fatal(err)
	}
	var victims []int
	for f := range strings.FieldsSeq(string(out)) {
		pid, _ := strconv.Atoi(f)
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if c := strings.TrimSpace(string(comm)); filepath.Dir(exe) == b || c == "slurmstepd" || c == "slurmd" {
			victims = append(victims, pid)
		}
	}
	killed := time.Now()
	for _, p := range victims {
		syscall.Kill(p, syscall.SIGKILL)
	}
	took := j.wait(t, 45*time.Second, killed)
	t.Logf("killed %d processes on h2; job ended %v later", len(victims), took.Round(time.Millisecond))
	if j.err == nil || !regexp.MustCompile(`host h2 \(ranks 2-3\) lost`).MatchString(j.out.String()) {
		t.Fatalf("exit %v; want host h2 (ranks 2-3) lost:\n%s", j.err, j.out.String())
	}
	noneLeft(t, b, 15*time.Second)
}

var jobID = regexp.MustCompile(`Submitted batch job (\d+)`)

// TestScancel: scancel of a running batch job, under hcclrun or srun
// alone, leaves no process of it on any node.
func TestScancel(t *testing.T) {
	e, b := setup(t)
	hcclrun, collcheck := filepath.Join(b, "hcclrun"), filepath.Join(b, "collcheck")
	for _, tc := range []struct{ name, wrap string }{
		{"hcclrun", hcclrun + " " + collcheck + " -hold 2m"},
		{"srun", "srun --mpi=pmi2 " + collcheck + " -hold 2m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outFile := filepath.Join(t.TempDir(), "out")
			out, err := run(t, e, time.Minute, "sbatch", "-N", "3", "--ntasks-per-node=2", "-o", outFile, "--wrap", tc.wrap)
			m := jobID.FindStringSubmatch(out)
			if err != nil || m == nil {
				t.Fatalf("sbatch: %v\n%s", err, out)
			}
			t.Cleanup(func() { e.Cmd(context.Background(), "scancel", m[1]).Run() })
			for end := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
				got, _ := os.ReadFile(outFile)
				if len(okLine.FindAll(got, -1)) == 6 {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("job %s: 6 ranks not ok after 2 minutes:\n%s", m[1], got)
				}
			}
			if len(procs(b, "", "")) < 6 {
				t.Fatalf("job %s: fewer than 6 processes running", m[1])
			}
			cancelled := time.Now()
			if out, err := run(t, e, time.Minute, "scancel", m[1]); err != nil {
				t.Fatalf("scancel: %v\n%s", err, out)
			}
			noneLeft(t, b, 30*time.Second)
			t.Logf("no process left %v after scancel", time.Since(cancelled).Round(time.Millisecond))
		})
	}
}

var stampLine = regexp.MustCompile(`(?m)^rank (\d+) init-done (\d+)$`)

// TestLaunchTime measures the launch of 6 ranks on the 3 nodes, from just
// before the command starts until the last rank is past Init (each rank
// prints the wall clock when Init returned; the nodes share this
// machine's clock), three ways in interleaved rounds: hcclrun over SSH
// (a hostfile), hcclrun inside an allocation (agents by srun), and srun
// --mpi=pmi2 alone. The allocation is taken once (salloc --no-shell)
// so that the rounds time the launch, not the scheduler.
func TestLaunchTime(t *testing.T) {
	e, b := setup(t)
	hcclrun, collcheck := filepath.Join(b, "hcclrun"), filepath.Join(b, "collcheck")
	out, err := run(t, e, time.Minute, "salloc", "--no-shell", "-N", "3", "--ntasks-per-node=2")
	m := regexp.MustCompile(`Granted job allocation (\d+)`).FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("salloc --no-shell: %v\n%s", err, out)
	}
	alloc := m[1]
	t.Cleanup(func() { e.Cmd(context.Background(), "scancel", alloc).Run() })
	hf := filepath.Join(t.TempDir(), "hostfile")
	os.WriteFile(hf, []byte("h1 slots=2\nh2 slots=2\nh3 slots=2\n"), 0o644)
	inAlloc := []string{"SLURM_JOB_ID=" + alloc, "SLURM_JOB_NODELIST=h[1-3]", "SLURM_TASKS_PER_NODE=2(x3)", "SLURM_NTASKS=6"}
	ways := []struct {
		name string
		args []string
		env  []string
	}{
		{"hcclrun over ssh", []string{hcclrun, "--hostfile", hf, "--ssh-config", e.Hosts.SSHConfig}, nil},
		{"hcclrun, agents by srun", []string{hcclrun}, inAlloc},
		{"srun --mpi=pmi2", []string{"srun", "--jobid=" + alloc, "--mpi=pmi2", "-n", "6"}, nil},
	}
	const rounds = 7
	times := make([][]time.Duration, len(ways))
	for range rounds {
		for i, w := range ways {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			cmd := e.Cmd(ctx, w.args[0], append(w.args[1:], collcheck, "-init-stamp", "-count", "1")...)
			cmd.Env = append(cmd.Env, w.env...)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			cancel()
			ms := stampLine.FindAllStringSubmatch(string(out), -1)
			if err != nil || len(ms) != 6 {
				t.Fatalf("%s: %v, %d init stamps:\n%s", w.name, err, len(ms), out)
			}
			var last int64
			for _, m := range ms {
				ns, _ := strconv.ParseInt(m[2], 10, 64)
				last = max(last, ns)
			}
			times[i] = append(times[i], time.Unix(0, last).Sub(start))
		}
	}
	for i, w := range ways {
		ds := times[i]
		sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
		t.Logf("%-24s 6 ranks on 3 nodes, launch to last Init: min %v median %v max %v (%d rounds)", w.name,
			ds[0].Round(time.Millisecond), ds[rounds/2].Round(time.Millisecond), ds[rounds-1].Round(time.Millisecond), rounds)
	}
}

// TestLauncherKilled: SIGKILL of hcclrun inside an allocation, which runs
// no code, leaves nothing: srun goes with it (parent-death signal) and
// Slurm ends the step, and each agent sees its link end and kills its
// ranks.
func TestLauncherKilled(t *testing.T) {
	e, b := setup(t)
	hcclrun, collcheck := filepath.Join(b, "hcclrun"), filepath.Join(b, "collcheck")
	j := startJob(t, e, "salloc", "-N", "3", "--ntasks-per-node=2", hcclrun, collcheck, "-hold", "2m")
	j.waitOK(t, 6)
	var launcher []int
	for _, p := range procs(b, "", "") {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if args := strings.Split(string(cmd), "\x00"); args[0] == hcclrun && len(args) > 1 && args[1] == collcheck {
			launcher = append(launcher, p)
		}
	}
	if len(launcher) != 1 {
		t.Fatalf("launcher processes %v, want one", launcher)
	}
	killed := time.Now()
	syscall.Kill(launcher[0], syscall.SIGKILL)
	noneLeft(t, b, 20*time.Second)
	t.Logf("no process left %v after the launcher's SIGKILL", time.Since(killed).Round(time.Millisecond))
	j.wait(t, 30*time.Second, killed)
}

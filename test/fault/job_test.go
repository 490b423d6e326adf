package fault

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tokenEnv marks every process of a job (hcclrun passes its environment
// on to the ranks), so that the leftover check finds them all, whoever
// started them.
const tokenEnv = "FAULTSUITE_JOB"

// line is one line of a job's output and when the suite read it.
type line struct {
	at     time.Time
	text   string
	stderr bool
}

// job is one hcclrun run under test.
type job struct {
	t       *testing.T
	cmd     *exec.Cmd
	token   string
	start   time.Time
	tmp     string   // TMPDIR of hcclrun
	running snapshot // what the job held while running, when noted

	mu    sync.Mutex
	cond  *sync.Cond
	lines []line
	eof   int          // output streams at EOF
	seen  map[int]bool // every pid of the job found (jobPids)

	exited  chan struct{}
	code    int
	elapsed time.Duration
}

// startJob runs hcclrun with args; prefix, when set, is a command that
// execs hcclrun (e.g. unshare), taking hcclrun's path and args after it.
func startJob(t *testing.T, env []string, prefix []string, args ...string) *job {
	t.Helper()
	var tok [6]byte
	rand.Read(tok[:])
	j := &job{t: t, token: hex.EncodeToString(tok[:]), tmp: t.TempDir(), exited: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	argv := append(append(append([]string(nil), prefix...), hcclrunBin), args...)
	j.cmd = exec.Command(argv[0], argv[1:]...)
	j.cmd.Env = append(append(os.Environ(), tokenEnv+"="+j.token, "TMPDIR="+j.tmp), env...)
	stdout, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := j.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	j.start = time.Now()
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go j.read(stdout, false)
	go j.read(stderr, true)
	go func() {
		// Wait only once both streams are drained, as exec requires.
		j.mu.Lock()
		for j.eof < 2 {
			j.cond.Wait()
		}
		j.mu.Unlock()
		j.cmd.Wait()
		j.elapsed = time.Since(j.start)
		j.code = j.cmd.ProcessState.ExitCode()
		close(j.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-j.exited:
		default:
			j.cmd.Process.Kill()
			<-j.exited
		}
	})
	return j
}

func (j *job) read(r io.Reader, isErr bool) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		j.mu.Lock()
		j.lines = append(j.lines, line{at: time.Now(), text: s.Text(), stderr: isErr})
		j.cond.Broadcast()
		j.mu.Unlock()
	}
	io.Copy(io.Discard, r)
	j.mu.Lock()
	j.eof++
	j.cond.Broadcast()
	j.mu.Unlock()
}

// output is everything the job printed so far.
func (j *job) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var b strings.Builder
	for _, l := range j.lines {
		if l.stderr {
			b.WriteString("[stderr] ")
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// matches returns the lines matching re, with their submatches.
func (j *job) matches(re *regexp.Regexp) ([]line, [][]string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var ls []line
	var ms [][]string
	for _, l := range j.lines {
		if m := re.FindStringSubmatch(l.text); m != nil {
			ls = append(ls, l)
			ms = append(ms, m)
		}
	}
	return ls, ms
}

// waitLines waits until n lines match re, or fails the test after d.
func (j *job) waitLines(re *regexp.Regexp, n int, d time.Duration) ([]line, [][]string) {
	j.t.Helper()
	timer := time.AfterFunc(d, func() {
		j.mu.Lock()
		j.cond.Broadcast()
		j.mu.Unlock()
	})
	defer timer.Stop()
	end := time.Now().Add(d)
	for {
		ls, ms := j.matches(re)
		if len(ls) >= n {
			return ls, ms
		}
		j.mu.Lock()
		done := j.eof == 2
		if !done && time.Now().Before(end) {
			j.cond.Wait()
		}
		j.mu.Unlock()
		if done || !time.Now().Before(end) {
			if ls, ms := j.matches(re); len(ls) >= n {
				return ls, ms
			}
			j.t.Fatalf("want %d lines matching %q within %v, got %d\noutput:\n%s", n, re, d, len(ls), j.output())
		}
	}
}

// wait waits for hcclrun to exit; past d it is killed and the test fails.
func (j *job) wait(d time.Duration) {
	j.t.Helper()
	select {
	case <-j.exited:
	case <-time.After(d):
		j.cmd.Process.Kill()
		<-j.exited
		j.t.Fatalf("hcclrun did not exit within %v\noutput:\n%s", d, j.output())
	}
}

// rank is what a rank's start line says.
type rank struct {
	pid     int
	control string
	jobID   string
}

var startRE = regexp.MustCompile(`^rank (\d+) start pid=(\d+) control=(\S+) job=(\S+)$`)

// ranks waits for n start lines and returns them by rank: every start
// line there is by then, the ranks without one zero.
func (j *job) ranks(n int, d time.Duration) []rank {
	j.t.Helper()
	_, ms := j.waitLines(startRE, n, d)
	rs := make([]rank, n)
	for _, m := range ms {
		r, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		for r >= len(rs) {
			rs = append(rs, rank{})
		}
		rs[r] = rank{pid: pid, control: m[3], jobID: m[4]}
	}
	return rs
}

// control waits for the first start line and returns the control address
// it names (every rank's is the same).
func (j *job) control(d time.Duration) string {
	j.t.Helper()
	_, ms := j.waitLines(startRE, 1, d)
	return ms[0][3]
}

var readyRE = regexp.MustCompile(`^rank (\d+) ready at=(\d+)$`)

// ready waits until n ranks are past Init and the first Barrier.
func (j *job) ready(n int, d time.Duration) {
	j.t.Helper()
	j.waitLines(readyRE, n, d)
}

// errorLine is a rank's "rank R error at=T class=C: ERR".
type errorLine struct {
	rank  int
	at    time.Time
	class string
	msg   string
}

var errorRE = regexp.MustCompile(`^rank (\d+) error at=(\d+) class=(\w+): (.*)$`)

func (j *job) errors() map[int]errorLine {
	_, ms := j.matches(errorRE)
	out := map[int]errorLine{}
	for _, m := range ms {
		r, _ := strconv.Atoi(m[1])
		ns, _ := strconv.ParseInt(m[2], 10, 64)
		out[r] = errorLine{rank: r, at: time.Unix(0, ns), class: m[3], msg: m[4]}
	}
	return out
}

// summary is hcclrun's own line on stderr ("hcclrun: ...").
func (j *job) summary() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var s []string
	for _, l := range j.lines {
		if l.stderr && strings.HasPrefix(l.text, "hcclrun: ") {
			s = append(s, l.text)
		}
	}
	return strings.Join(s, "\n")
}

// signal sends sig to pid.
func signal(t *testing.T, pid int, sig syscall.Signal) time.Time {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill %d %v: %v", pid, sig, err)
	}
	return time.Now()
}

package launcher

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
)

// agentModeEnv makes the test binary run as an agent (TestMain).
const agentModeEnv = "HCCLRUN_TEST_AGENT"

// startAgentProc starts this test binary as an agent, a real process on
// pipes as sshd would run it, and returns it with its stdin and stdout.
func startAgentProc(t *testing.T) (*exec.Cmd, io.WriteCloser, io.Reader, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), agentModeEnv+"=1")
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The deadline of every hand-driven exchange: a read from a hung agent
	// ends with EOF when it is killed.
	deadline := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	t.Cleanup(func() {
		deadline.Stop()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, in, out, stderr
}

// agentHost is a Host whose ranks run through a local agent process.
func agentHost(t *testing.T, name string, ranks int) Host {
	t.Helper()
	cmd, in, out, stderr := startAgentProc(t)
	sp, err := NewAgentSpawner(t.Context(), name, AgentLink{R: out, W: in, Stderr: nil, Close: func() error { return nil }}, nil)
	if err != nil {
		t.Fatalf("agent: %v (stderr %s)", err, stderr)
	}
	_ = cmd
	return Host{Spawner: sp, Ranks: ranks} // no address: the name is the server_id
}

func TestAgentRunsJob(t *testing.T) {
	dir := t.TempDir()
	job := &Job{
		Program: rankProg, TagOutput: true, Args: script(dir, "env", "table"),
		Hosts:  []Host{agentHost(t, "node-a", 2), agentHost(t, "node-b", 3)},
		Stdin:  strings.NewReader(""),
		Export: []string{"HCCL_TEST_EXPORTED=yes"},
	}
	res := runJob(t, job, 30*time.Second)
	noLeftovers(t, dir)
	if res.err != nil {
		t.Fatalf("Run: %v\n%s", res.err, res.stderr)
	}
	envs, _ := splitTagged(t, res.stdout.String(), 5)
	for r, e := range envs {
		if e["HCCL_RANK"] == "" || e["TABLE_MODE"] != "0600" || e["HCCL_TEST_EXPORTED"] != "yes" || e["HCCL_JOB_KEY"] == "" {
			t.Errorf("rank %d: env %v", r, e)
		}
	}
	if envs[0]["HCCL_RANK_TABLE_FILE"] == envs[2]["HCCL_RANK_TABLE_FILE"] {
		t.Errorf("both agents staged the same table")
	}
	if !strings.Contains(filepath.Base(filepath.Dir(envs[0]["HCCL_RANK_TABLE_FILE"])), agentTableDirPrefix) {
		t.Errorf("agent table in %s", envs[0]["HCCL_RANK_TABLE_FILE"])
	}
	if _, err := os.Stat(envs[0]["HCCL_RANK_TABLE_FILE"]); !os.IsNotExist(err) {
		t.Errorf("agent left its rank table: %v", err)
	}
}

func TestAgentFailuresNameTheHost(t *testing.T) {
	tests := []struct {
		name string
		job  func(dir string) *Job
		want string
		code int
	}{
		{"exit code", func(dir string) *Job {
			return &Job{Program: rankProg, Grace: time.Second, Args: script(dir, "ready", "DIR", "await@3", "DIR", "4", "exit@3", "9", "sleep", "30s")}
		}, `^rank 3 \(pid \d+ on node-b\) exited with code 9; terminated 3 other ranks$`, 9},
		{"signal", func(dir string) *Job {
			return &Job{Program: rankProg, Grace: time.Second, Args: script(dir, "ready", "DIR", "await@1", "DIR", "4", "kill@1", "KILL", "sleep", "30s")}
		}, `^rank 1 \(pid \d+ on node-a\) killed by SIGKILL \(signal 9\); terminated 3 other ranks$`, 137},
		{"not found", func(dir string) *Job {
			return &Job{Program: filepath.Join(dir, "missing")}
		}, `^rank \d on node-[ab]: cannot start ".*missing": .*no such file or directory$`, 127},
		{"stdin to a remote rank 0", func(dir string) *Job {
			return &Job{Program: rankProg, Args: script(dir, "cat@0", "exit@0", "5"), Stdin: strings.NewReader("line one\nline two\n")}
		}, `^rank 0 \(pid \d+ on node-a\) exited with code 5`, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			job := tt.job(dir)
			job.Hosts = []Host{agentHost(t, "node-a", 2), agentHost(t, "node-b", 2)}
			res := runJob(t, job, 30*time.Second)
			if tt.name != "not found" {
				noLeftovers(t, dir)
			}
			if res.err == nil || !regexp.MustCompile(tt.want).MatchString(res.err.Error()) {
				t.Fatalf("Run: %v, want %s", res.err, tt.want)
			}
			if c := ExitCode(res.err); c != tt.code {
				t.Fatalf("exit code %d, want %d", c, tt.code)
			}
			if tt.name == "stdin to a remote rank 0" && res.stdout.String() != "line one\nline two\n" {
				t.Fatalf("rank 0 echoed %q", res.stdout)
			}
		})
	}
}

func TestAgentSignalForwarding(t *testing.T) {
	dir := t.TempDir()
	sigs := make(chan os.Signal, 1)
	job := &Job{
		Program: rankProg, Args: script(dir, "trap", "TERM", "42", "ready", dir, "sleep", "30s"),
		Hosts:   []Host{agentHost(t, "node-a", 1), agentHost(t, "node-b", 1)},
		Signals: sigs,
	}
	go func() {
		waitFiles(t, dir, ".ready", 2, 20*time.Second)
		sigs <- syscall.SIGTERM
	}()
	res := runJob(t, job, 30*time.Second)
	if ie, ok := res.err.(*InterruptError); !ok || ie.Terminated != 2 {
		t.Fatalf("Run: %v", res.err)
	}
}

// hand speaks the agent protocol by hand to an agent process.
type hand struct {
	t  *testing.T
	fw *frameWriter
	r  *bufio.Reader
}

func (h *hand) send(typ byte, m agentMsg) {
	if err := h.fw.sendMsg(typ, m); err != nil {
		h.t.Fatal(err)
	}
}

// until reads frames until one of type typ arrives.
func (h *hand) until(typ byte) frame {
	for {
		f, err := readFrame(h.r)
		if err != nil {
			h.t.Fatalf("waiting for frame type %d: %v", typ, err)
		}
		if f.typ == typ {
			return f
		}
	}
}

// TestAgentKillsRanksWhenLinkEnds: whatever way the launcher goes (stdin
// EOF, silence on an open link, a signal to the agent), the agent kills
// its ranks, grandchildren included, removes the table and exits.
func TestAgentKillsRanksWhenLinkEnds(t *testing.T) {
	tests := []struct {
		name   string
		end    func(cmd *exec.Cmd, in io.WriteCloser)
		within time.Duration
	}{
		{"stdin EOF", func(_ *exec.Cmd, in io.WriteCloser) { in.Close() }, 2 * time.Second},
		{"silence", func(*exec.Cmd, io.WriteCloser) {}, agentSilence + 3*time.Second},
		{"SIGTERM", func(cmd *exec.Cmd, _ io.WriteCloser) { cmd.Process.Signal(syscall.SIGTERM) }, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd, in, out, stderr := startAgentProc(t)
			h := &hand{t: t, fw: newFrameWriter(in), r: bufio.NewReader(out)}
			h.send(msgHello, agentMsg{Version: agentProtoVersion})
			if f := h.until(msgReady); f.msg.Err != "" || f.msg.Pid != cmd.Process.Pid {
				t.Fatalf("ready: %+v", f.msg)
			}
			h.send(msgStage, agentMsg{Data: []byte(`{}`)})
			table := h.until(msgStaged).msg.Path
			for r := range 2 {
				h.send(msgStart, agentMsg{Rank: r, Path: rankProg, Env: []string{"HCCL_RANK=" + string(rune('0'+r))},
					Args: script(dir, "child", dir, "sleep", "60s")})
				if f := h.until(msgStarted); f.msg.Err != "" || f.msg.Pid == 0 {
					t.Fatalf("start: %+v", f.msg)
				}
			}
			waitFiles(t, dir, ".child", 2, 10*time.Second)
			start := time.Now()
			tt.end(cmd, in)
			done := make(chan error, 1)
			go func() { io.Copy(io.Discard, out); done <- cmd.Wait() }()
			select {
			case err := <-done:
				t.Logf("agent ended after %v: %v; stderr %q", time.Since(start).Round(time.Millisecond), err, bytes.TrimSpace([]byte(stderr.String())))
			case <-time.After(tt.within):
				t.Fatalf("agent still running %v after the link ended", tt.within)
			}
			noLeftovers(t, dir)
			if _, err := os.Stat(table); !os.IsNotExist(err) {
				t.Errorf("table %s left behind: %v", table, err)
			}
		})
	}
}

// An agent of another protocol version refuses in its Ready and exits.
func TestAgentRefusesOtherVersion(t *testing.T) {
	cmd, in, out, _ := startAgentProc(t)
	h := &hand{t: t, fw: newFrameWriter(in), r: bufio.NewReader(out)}
	h.send(msgHello, agentMsg{Version: agentProtoVersion + 1})
	f := h.until(msgReady)
	if !strings.Contains(f.msg.Err, "use the same hcclrun on every host") {
		t.Fatalf("ready: %+v", f.msg)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("agent still running after refusing")
	}
}

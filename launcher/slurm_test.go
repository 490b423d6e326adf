package launcher

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/launcher/placement"
)

// TestJobKeyStaysWithAgent: over a link whose agent holds the job key (a
// Slurm launch), the start message carries HCCL_JOB_KEY empty, and the
// job's key is that one.
func TestJobKeyStaysWithAgent(t *testing.T) {
	key, _ := wire.NewKey()
	fromLauncher, toAgent := io.Pipe()
	fromAgent, toLauncher := io.Pipe()
	t.Cleanup(func() { toAgent.Close(); fromAgent.Close() })
	started := make(chan agentMsg, 1)
	go func() { // the agent's side, by hand
		fw := newFrameWriter(toLauncher)
		for {
			f, err := readFrame(fromLauncher)
			if err != nil {
				return
			}
			switch f.typ {
			case msgHello:
				fw.sendMsg(msgReady, agentMsg{Version: agentProtoVersion, Hostname: "n1", Pid: 1})
			case msgStart:
				started <- f.msg
				fw.sendMsg(msgStarted, agentMsg{Rank: f.msg.Rank, Pid: 2})
			}
		}
	}()
	sp, err := NewAgentSpawner(t.Context(), "n1", AgentLink{R: fromAgent, W: toAgent, JobKey: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	hosts := []Host{{Spawner: sp}}
	if k, err := jobKey(hosts); err != nil || string(k) != string(key) {
		t.Fatalf("jobKey = %x, %v; want the link's", k, err)
	}
	secret := EnvJobKey + "=" + wire.EncodeKey(key)
	if _, err := sp.Start(ProcSpec{Rank: 0, Path: "/bin/true", Env: []string{"A=1", secret}}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-started:
		if strings.Join(m.Env, " ") != "A=1 "+EnvJobKey+"=" {
			t.Fatalf("start message env %q", m.Env)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no start message")
	}
}

// TestSrunFails: an srun that cannot start the step fails the job with
// its own words, naming the nodes whose agents never came.
func TestSrunFails(t *testing.T) {
	dir := t.TempDir()
	srun := filepath.Join(dir, "srun")
	os.WriteFile(srun, []byte("#!/bin/sh\ncat >/dev/null\necho 'srun: error: Unable to create step for job 7: Requested node configuration is not available' >&2\nexit 1\n"), 0o755)
	p, err := placement.Map([]placement.Host{{Name: "127.0.0.1", Slots: 1}}, placement.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = connectSlurm(t.Context(), p, Remote{Slurm: &Slurm{Srun: srun}}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "srun ended before the agents of 127.0.0.1 connected") ||
		!strings.Contains(err.Error(), "Unable to create step") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestSrunArgs(t *testing.T) {
	got := strings.Join(srunArgs(3, "h1,h2,h3"), " ")
	for _, want := range []string{"--nodes=3", "--ntasks=3", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "--nodelist=h1,h2,h3", "--input=all"} {
		if !strings.Contains(got, want) {
			t.Errorf("srun args %q lack %s", got, want)
		}
	}
}

package testslurm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testhosts"
)

// Env is a running Slurm harness.
type Env struct {
	Hosts  *testhosts.Env // the simulated hosts the nodes run in
	Conf   string         // slurm.conf: every Slurm command needs SLURM_CONF=Conf
	Script string         // absolute path of slurm.sh
	Nodes  []string       // the node names, h1, h2, ... (the hosts' names)
}

// DefaultState is slurm.sh's HCCL_TS_STATE default.
const DefaultState = "/tmp/hcclrun-testslurm"

// Require returns the Slurm harness with at least n nodes, after taking the
// hosts' lock (testhosts.Require) and repairing a node whose slurmd went
// with a crashed host. Without it the test is skipped with a message that
// says how to bring it up; with HCCL_TEST_REQUIRE_SLURM=1 it fails.
func Require(t testing.TB, n int) *Env {
	t.Helper()
	hosts := testhosts.Require(t, n)
	e, why := lookup(hosts, n)
	if why == "" {
		return e
	}
	msg := fmt.Sprintf("testslurm: %s; to run this test: apt-get install -y --no-install-recommends slurm-wlm munge && sudo internal/testslurm/slurm.sh up && eval \"$(internal/testslurm/slurm.sh env)\"", why)
	if os.Getenv("HCCL_TEST_REQUIRE_SLURM") == "1" {
		t.Fatal(msg + " (HCCL_TEST_REQUIRE_SLURM=1: not skipping)")
	}
	t.Skip(msg)
	return nil
}

func lookup(hosts *testhosts.Env, n int) (*Env, string) {
	if _, err := exec.LookPath("srun"); err != nil {
		return nil, "srun not found (Slurm not installed)"
	}
	state := os.Getenv("HCCL_TS_STATE")
	if state == "" {
		state = DefaultState
	}
	conf := os.Getenv("SLURM_CONF")
	if conf == "" {
		conf = state + "/slurm.conf"
	}
	script := os.Getenv("HCCL_TEST_SLURM_SCRIPT")
	if script == "" {
		if _, err := os.Stat(state + "/env"); err != nil {
			return nil, "harness not up (no " + state + "/env)"
		}
		script = hosts.Script[:strings.LastIndex(hosts.Script, "/testhosts/")] + "/testslurm/slurm.sh"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Idempotent: restarts a slurmd lost with its host, else only checks.
	out, err := exec.CommandContext(ctx, script, "up").CombinedOutput()
	if err != nil {
		return nil, fmt.Sprintf("%s up: %v: %s", script, err, strings.TrimSpace(string(out)))
	}
	if len(hosts.Names) < n {
		return nil, fmt.Sprintf("%d nodes, test needs %d", len(hosts.Names), n)
	}
	return &Env{Hosts: hosts, Conf: conf, Script: script, Nodes: hosts.Names}, ""
}

// Cmd is a Slurm command (srun, salloc, sbatch, scancel, squeue ...) with
// SLURM_CONF set and no SLURM_ variables of an allocation the test itself
// might run in.
func (e *Env) Cmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLURM_") || strings.HasPrefix(kv, "PMI_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "SLURM_CONF="+e.Conf)
	return cmd
}

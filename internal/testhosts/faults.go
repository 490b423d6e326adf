package testhosts

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scriptTimeout bounds one hosts.sh call: each is well under a second when healthy.
const scriptTimeout = 30 * time.Second

// Run runs hosts.sh with args (e.g. "status") and returns its standard output.
// host arguments are names such as "h2" (see [Env.Name]).
func (e *Env) Run(ctx context.Context, args ...string) ([]byte, error) {
	if e.Script == "" {
		return nil, fmt.Errorf("testhosts: HCCL_TEST_HOSTS_SCRIPT is not set")
	}
	ctx, cancel := context.WithTimeout(ctx, scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Script, args...)
	if e.State != "" {
		cmd.Env = append(cmd.Environ(), "HCCL_TH_STATE="+e.State)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("testhosts: hosts.sh %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(errb.Bytes()))
	}
	return out.Bytes(), nil
}

func (e *Env) must(t testing.TB, args ...string) []byte {
	t.Helper()
	out, err := e.Run(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// cleanupRun runs hosts.sh from a t.Cleanup, when t.Context is already cancelled.
func (e *Env) cleanupRun(t testing.TB, args ...string) {
	if _, err := e.Run(context.Background(), args...); err != nil {
		t.Error(err)
	}
}

// Crash kills every process of host name at once (SIGKILL to its PID namespace), like
// pulling its power cord. A cleanup boots it again.
func (e *Env) Crash(t testing.TB, name string) {
	t.Helper()
	e.must(t, "crash", name)
	t.Cleanup(func() { e.cleanupRun(t, "start", name) })
}

// Cut takes host name off the network: its link goes down (peers get no carrier, TCP
// stalls) or, if silent, every packet on its eth0 is dropped while the link stays up.
// A cleanup heals it.
func (e *Env) Cut(t testing.TB, name string, silent bool) {
	t.Helper()
	args := []string{"cut", name}
	if silent {
		args = append(args, "silent")
	}
	t.Cleanup(func() { e.cleanupRun(t, "heal", name) })
	e.must(t, args...)
}

// Heal undoes Cut now (the cleanup Cut registered then does nothing more).
func (e *Env) Heal(t testing.TB, name string) {
	t.Helper()
	e.must(t, "heal", name)
}

// Pids returns the root-namespace PIDs of every process on host name (its sshd included),
// for tests that check nothing of theirs survives.
func (e *Env) Pids(t testing.TB, name string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(string(e.must(t, "pids", name))) {
		p, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("testhosts: hosts.sh pids %s: bad pid %q", name, f)
		}
		pids = append(pids, p)
	}
	return pids
}

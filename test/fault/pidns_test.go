package fault

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestLaunchersInPIDNamespaces: two launchers in different PID namespaces
// (containers, the multi-host harness's hosts) share /tmp. The second one's
// sweep of stale rank-table directories must leave the first one's alone,
// although the pid in its name does not exist in the second's namespace:
// the sweep once decided with kill(pid, 0) and deleted a live job's table
// under its ranks (HCCL_RANK_TABLE_FILE: no such file or directory).
func TestLaunchersInPIDNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for PID namespaces (unshare --pid)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1) (util-linux)")
	}
	shared := t.TempDir()
	env := []string{"TMPDIR=" + shared}
	// hcclrun A runs as pid 4001 of its namespace, a pid that the fresh
	// namespace of B does not have.
	nsA := []string{"unshare", "--pid", "--mount-proc", "--kill-child", "sh", "-c",
		`echo 4000 > /proc/sys/kernel/ns_last_pid && "$0" "$@"; exit $?`}
	nsB := []string{"unshare", "--pid", "--mount-proc", "--kill-child"}

	// A's rank reads its table only after B has started and swept.
	a := startJob(t, env, nsA, "-np", "1", "/bin/sh", "-c", `sleep 2; cat "$HCCL_RANK_TABLE_FILE" >/dev/null && echo table read`)
	dirA := waitTableDir(t, shared, 10*time.Second)
	t.Logf("A's table directory: %s", filepath.Base(dirA))

	b := startJob(t, env, nsB, "-np", "1", "/bin/true")
	b.wait(20 * time.Second)
	if b.code != 0 {
		t.Fatalf("B exited %d:\n%s", b.code, b.output())
	}
	if _, err := os.Stat(filepath.Join(dirA, "ranktable.json")); err != nil {
		t.Errorf("B's sweep took the table of A, which runs: %v", err)
	}
	a.wait(20 * time.Second)
	if a.code != 0 {
		t.Errorf("A exited %d:\n%s", a.code, a.output())
	}
	if left, _ := filepath.Glob(filepath.Join(shared, "hcclrun-*")); len(left) > 0 {
		t.Errorf("left in the shared TMPDIR: %v", left)
	}
}

// waitTableDir waits for the one rank-table directory under tmp.
func waitTableDir(t *testing.T, tmp string, d time.Duration) string {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		dirs, _ := filepath.Glob(filepath.Join(tmp, "hcclrun-*-*"))
		if len(dirs) == 1 {
			if _, err := os.Stat(filepath.Join(dirs[0], "ranktable.json")); err == nil {
				return dirs[0]
			}
		}
	}
	t.Fatalf("no rank-table directory in %s within %v", tmp, d)
	return ""
}

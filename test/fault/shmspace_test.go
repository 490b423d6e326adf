package fault

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestShmTooSmall runs the job in a private mount namespace whose /dev/shm
// is a 128 KiB tmpfs, too small for a ring's two links even at the
// smallest rings: Init fails on the spot with the message that says how
// much there is, how much the job needs and what to do, and hcclrun exits
// with that rank's code (7: Init failed).
func TestShmTooSmall(t *testing.T) {
	prefix := smallShm(t, "128k")
	j := startJob(t, nil, prefix, args(faultProg, "-mode", "loop", "-for", "1s")...)
	j.ranks(1, 30*time.Second)
	j.wait(20 * time.Second)
	// The first rank to fail brings the job down, and a rank that was
	// still starting may be stopped before it says so: check the ranks
	// that did.
	j.checkClean(j.ranks(1, time.Second))
	msg := regexp.MustCompile(`^hccl: Init rank \d: /dev/shm has 128 KiB free, this job needs \d+ [KMG]iB: enlarge it or lower HCCL_BUFFSIZE$`)
	errs := j.errors()
	if len(errs) == 0 {
		t.Fatalf("no rank reported an error\n%s", j.output())
	}
	for r, e := range errs {
		if e.class != "init" || !msg.MatchString(e.msg) {
			t.Errorf("rank %d: %s %q, want %q", r, e.class, e.msg, msg)
		}
	}
	if m := summaryRE.FindStringSubmatch(j.summary()); j.code != 7 || m == nil || m[1] != "7" {
		t.Errorf("exit code %d, summary %q; want 7", j.code, j.summary())
	}
	if j.elapsed > 10*time.Second {
		t.Errorf("took %v", j.elapsed)
	}
	e := errs[firstFailed(errs)]
	t.Logf("hcclrun exited %d after %v: %s; rank %d: %s", j.code, j.elapsed.Round(time.Millisecond), j.summary(), e.rank, e.msg)
}

// TestShmSmallFits: in a 4 MiB /dev/shm, too small for the full mesh of
// four ranks at the default 4 MiB rings, the rings shrink to fit and the
// job runs its collectives over shared memory without a warning.
func TestShmSmallFits(t *testing.T) {
	prefix := smallShm(t, "4m")
	j := startJob(t, nil, prefix, args(faultProg, "-mode", "loop", "-for", "1s")...)
	j.ranks(4, 30*time.Second)
	j.wait(60 * time.Second)
	if j.code != 0 {
		t.Fatalf("exit code %d, summary %q\n%s", j.code, j.summary(), j.output())
	}
	if out := j.output(); strings.Contains(out, "level=WARN") {
		t.Errorf("warnings:\n%s", out)
	}
}

// smallShm is the command prefix that runs a job in a private mount
// namespace whose /dev/shm is a tmpfs of size (mount's size=), or skips
// the test where that cannot be had.
func smallShm(t *testing.T, size string) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a private mount namespace with a small /dev/shm")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1) (util-linux)")
	}
	return []string{"unshare", "-m", "sh", "-c", `mount -t tmpfs -o size=` + size + ` tmpfs /dev/shm && exec "$0" "$@"`}
}

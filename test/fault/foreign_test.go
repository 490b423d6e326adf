package fault

import (
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// plantShm puts /dev/shm/hcclrun-PID-RANDOM, as shm names a segment's
// file where the tmpfs has no O_TMPFILE, and removes it when the test ends.
func plantShm(t *testing.T, pid string) string {
	t.Helper()
	var rnd [8]byte
	rand.Read(rnd[:])
	path := fmt.Sprintf("/dev/shm/hcclrun-%s-%x", pid, rnd)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("plant %s: %v", path, err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(path) })
	return path
}

// TestLeftoversIgnoreForeignFiles: a file under our prefix appears in
// /dev/shm while the job runs, as one of another job's killed ranks would
// leave it; its pid is pid_max, which no process can have. The leftover
// check passes: it judges only names given by the job's own processes,
// and it does see one of those.
func TestLeftoversIgnoreForeignFiles(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	j := startJob(t, nil, nil, "-np", "2", faultProg, "-mode", "loop", "-for", "500ms")
	rs := j.ranks(2, 30*time.Second)
	plantShm(t, strings.TrimSpace(string(b)))
	j.wait(60 * time.Second)
	if j.code != 0 {
		t.Fatalf("the job failed: exit code %d\n%s", j.code, j.output())
	}
	j.checkClean(rs)

	own := plantShm(t, strconv.Itoa(rs[0].pid))
	if left := shmNames(j.seenPids(rs)); !slices.Contains(left, own) {
		t.Errorf("the check missed %s, named by rank 0's pid (it found %v)", own, left)
	}
}

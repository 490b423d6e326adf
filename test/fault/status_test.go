package fault

import (
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestStatusStuckRank: SIGSTOP one rank in the middle of an AllReduce
// loop; hcclrun status (and SIGUSR1 to hcclrun) must show it SILENT and
// a peer waiting for it inside an AllReduce, without disturbing the job:
// after SIGCONT the job completes. HCCL_HEARTBEAT_TIMEOUT=60 keeps the
// stopped rank from being declared lost meanwhile.
func TestStatusStuckRank(t *testing.T) {
	const victim = 1
	env := []string{"HCCL_HEARTBEAT_TIMEOUT=60"}
	j := startJob(t, env, nil, args(faultProg, "-mode", "loop", "-for", "6s")...)
	rs := j.ranks(4, 30*time.Second)
	j.ready(4, 60*time.Second)
	// Past a heartbeat into the loop, so that the victim has reported a
	// call before it stops.
	time.Sleep(1200 * time.Millisecond)
	signal(t, rs[victim].pid, syscall.SIGSTOP)
	continued := false
	defer func() {
		if !continued {
			syscall.Kill(rs[victim].pid, syscall.SIGCONT)
		}
	}()

	silent := regexp.MustCompile(`(?m)^1 .*\bSILENT\b`)
	waits := regexp.MustCompile(`(?m)^[023] .*#\d+ AllReduce step \d+\s+rank 1\s`)
	var out []byte
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		cmd := exec.Command(hcclrunBin, "status", strconv.Itoa(j.cmd.Process.Pid))
		var err error
		out, err = cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("hcclrun status: %v\n%s", err, out)
		}
		if silent.Match(out) && waits.Match(out) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("hcclrun status does not show rank 1 SILENT and a peer waiting for it:\n%s", out)
		}
	}
	t.Logf("hcclrun status:\n%s", out)

	signal(t, j.cmd.Process.Pid, syscall.SIGUSR1)
	j.waitLines(regexp.MustCompile(`^SILENT for more than 2 heartbeats .*: rank 1$`), 1, 10*time.Second)

	signal(t, rs[victim].pid, syscall.SIGCONT)
	continued = true
	j.wait(60 * time.Second)
	j.checkClean(rs)
	if j.code != 0 {
		t.Fatalf("hcclrun exited %d after SIGCONT:\n%s", j.code, tail(j.output(), 30))
	}
}

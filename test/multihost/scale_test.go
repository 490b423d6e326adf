package multihost

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testhosts"
)

// scaleOK is collcheck's line for a rank of the 96-rank job.
var scaleOK = regexp.MustCompile(`(?m)^rank (\d+)/96 ok host=(\S+) local=(\d+)/32$`)

// TestNinetySixRanksThreeHosts: the collective check on 96 ranks, 32 on
// each of the three simulated hosts (all of them on this machine's two
// cores): hierarchical algorithms over shm inside a host and TCP between,
// every collective checked exactly, every rank on the host the map says,
// and no warning: the rings shrink so that the full mesh AlltoAll opens
// between a host's 32 ranks fits the 512 MiB /dev/shm the harness gives
// each host.
func TestNinetySixRanksThreeHosts(t *testing.T) {
	e := testhosts.Require(t, 3)
	b := binaries(t)
	hf := filepath.Join(t.TempDir(), "hostfile")
	var lines []string
	for _, n := range e.Names[:3] {
		lines = append(lines, n+" slots=32")
	}
	if err := os.WriteFile(hf, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := hcclrun(t, b, 4*time.Minute, append(hostArgs(e, hf), filepath.Join(b, "collcheck"), "-count", "100")...)
	if r.code != 0 {
		t.Fatalf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.code, r.elapsed, r.stdout, r.stderr)
	}
	ms := scaleOK.FindAllStringSubmatch(r.stdout, -1)
	if len(ms) != 96 {
		t.Fatalf("%d ranks report ok, want 96:\n%s", len(ms), r.stdout)
	}
	for _, m := range ms {
		rank, _ := strconv.Atoi(m[1])
		if want := e.Names[rank/32]; m[2] != want || m[3] != strconv.Itoa(rank%32) {
			t.Errorf("rank %d ran on %s as local rank %s, want %s local %d", rank, m[2], m[3], want, rank%32)
		}
	}
	if warns := regexp.MustCompile(`(?m)^.*level=WARN.*$`).FindAllString(r.stderr, -1); len(warns) > 0 {
		t.Errorf("%d warnings, want none:\n%s", len(warns), strings.Join(warns, "\n"))
	}
	t.Logf("96 ranks on 3 hosts: %v", r.elapsed.Round(time.Millisecond))
}

package multihost

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// TestTorchrunThreeHosts: across the simulated hosts, 2 ranks each, every
// rank gets torchrun's variables with MASTER_ADDR the first host's address
// (where rank 0 runs, reachable from the others) and GROUP_RANK its host's
// rank; then PyTorch's DDP example, whose env:// rendezvous connects every
// rank to rank 0's MASTER_PORT, trains to the same parameters on all six.
func TestTorchrunThreeHosts(t *testing.T) {
	e, b, hf := setup(t)
	script := `echo "rank=$RANK group=$GROUP_RANK/$GROUP_WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT host=$(hostname)"`
	out := mustRun(t, b, append(hostArgs(e, hf), "sh", "-c", script)...)
	re := regexp.MustCompile(`rank=(\d) group=(\d)/3 master=([0-9.]+):(\d+) host=(\S+)`)
	masters := map[string]bool{}
	lines := re.FindAllStringSubmatch(out, -1)
	for _, m := range lines {
		masters[m[3]+":"+m[4]] = true
		rank, _ := strconv.Atoi(m[1])
		if want := strconv.Itoa(rank / 2); m[2] != want { // 2 slots per host
			t.Errorf("rank %s on %s: GROUP_RANK %s, want %s", m[1], m[5], m[2], want)
		}
	}
	if len(lines) != 6 || len(masters) != 1 || !masters[e.Hosts[0]+":"+lines[0][4]] {
		t.Fatalf("want 6 ranks with MASTER_ADDR %s and one port:\n%s", e.Hosts[0], out)
	}

	py := testprog.RequirePython(t, "torch.distributed", "HCCL_TEST_REQUIRE_TORCH", "python3-torch")
	ddp, err := filepath.Abs(filepath.Join("..", "..", "examples", "pytorch", "ddp.py"))
	if err != nil {
		t.Fatal(err)
	}
	out = mustRun(t, b, append(hostArgs(e, hf), py, ddp)...)
	digests := map[string]bool{}
	for _, m := range regexp.MustCompile(`rank \d+/6 local \d params ([0-9a-f]{16})`).FindAllStringSubmatch(out, -1) {
		digests[m[1]] = true
	}
	if strings.Count(out, " params ") != 6 || len(digests) != 1 {
		t.Fatalf("want 6 ranks with one digest of their parameters:\n%s", out)
	}
}

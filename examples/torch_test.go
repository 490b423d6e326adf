package examples_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// torchPython returns a python3 that imports torch; CI installs
// python3-torch and sets HCCL_TEST_REQUIRE_TORCH=1.
func torchPython(t *testing.T) string {
	t.Helper()
	return testprog.RequirePython(t, "torch.distributed", "HCCL_TEST_REQUIRE_TORCH", "python3-torch")
}

// run runs the built hcclrun with args and returns its output.
func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "hcclrun"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("hcclrun %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestTorchrunEnvironment: every rank gets the variables torchrun sets,
// MASTER_PORT is a port, and -x overrides MASTER_PORT.
func TestTorchrunEnvironment(t *testing.T) {
	bin := build(t)
	script := `echo "rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE group=$GROUP_RANK/$GROUP_WORLD_SIZE role=$ROLE_RANK/$ROLE_WORLD_SIZE run=$TORCHELASTIC_RUN_ID master=$MASTER_ADDR:$MASTER_PORT"`
	out := run(t, bin, "-np", "3", "sh", "-c", script)
	line := regexp.MustCompile(`rank=(\d) world=3 local=(\d)/3 group=0/1 role=(\d)/3 run=(\S+) master=127\.0\.0\.1:(\d+)`)
	ports, runs := map[string]bool{}, map[string]bool{}
	seen := map[string]bool{}
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		if m[1] != m[2] || m[1] != m[3] {
			t.Errorf("rank %s: LOCAL_RANK %s, ROLE_RANK %s", m[1], m[2], m[3])
		}
		seen[m[1]], runs[m[4]], ports[m[5]] = true, true, true
	}
	if len(seen) != 3 || len(runs) != 1 || len(ports) != 1 {
		t.Fatalf("want 3 ranks with one run id and one port:\n%s", out)
	}
	for p := range ports {
		if p == "0" {
			t.Errorf("MASTER_PORT=0:\n%s", out)
		}
	}
	out = run(t, bin, "-np", "2", "-x", "MASTER_PORT=29999", "sh", "-c", `echo "port=$MASTER_PORT"`)
	if strings.Count(out, "port=29999") != 2 {
		t.Errorf("-x MASTER_PORT=29999 does not reach both ranks:\n%s", out)
	}
}

// TestTorchDDP runs the DDP example (gloo, CPU tensors) under hcclrun -np 4
// as a torchrun user would, and checks that the four ranks trained to the
// same parameters.
func TestTorchDDP(t *testing.T) {
	py := torchPython(t)
	bin := build(t)
	script, err := filepath.Abs(filepath.Join("pytorch", "ddp.py"))
	if err != nil {
		t.Fatal(err)
	}
	out := run(t, bin, "-np", "4", py, script)
	checkDDP(t, out, 4)
}

// checkDDP checks the output of ddp.py at np ranks: each rank's line, all
// with the same parameters' digest, and rank 0's checksum.
func checkDDP(t *testing.T, out string, np int) {
	t.Helper()
	digests := map[string]bool{}
	lines := regexp.MustCompile(`rank (\d+)/(\d+) local \d+ params ([0-9a-f]{16})`).FindAllStringSubmatch(out, -1)
	for _, m := range lines {
		digests[m[3]] = true
	}
	if len(lines) != np || len(digests) != 1 || !strings.Contains(out, "checksum ") {
		t.Fatalf("want %d ranks with one digest of their parameters and a checksum:\n%s", np, out)
	}
}

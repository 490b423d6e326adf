package multihost

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// TestCInterfaceThreeHosts: the C examples (every collective of hccl.h,
// checked exactly; a graph of them replayed) and the Python one
// (python/hccl over libhccl.so) on the simulated hosts, 2 ranks each:
// shared memory inside a host, TCP across.
func TestCInterfaceThreeHosts(t *testing.T) {
	e, b, hf := setup(t)
	lib, err := testprog.BuildCLib(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	example := filepath.Join(filepath.Dir(lib.Lib), "allreduce")
	if err := lib.Compile("examples/c/allreduce.c", example); err != nil {
		t.Fatal(err)
	}
	graph := filepath.Join(filepath.Dir(lib.Lib), "graph")
	if err := lib.Compile("examples/c/graph.c", graph); err != nil {
		t.Fatal(err)
	}
	wantSix := func(t *testing.T, out string) {
		t.Helper()
		for r := range 6 {
			if !strings.Contains(out, fmt.Sprintf("rank %d/6 ok\n", r)) {
				t.Fatalf("rank %d did not report ok:\n%s", r, out)
			}
		}
	}
	t.Run("c", func(t *testing.T) {
		wantSix(t, mustRun(t, b, append(hostArgs(e, hf), example)...))
	})
	t.Run("cgraph", func(t *testing.T) {
		wantSix(t, mustRun(t, b, append(hostArgs(e, hf), graph)...))
	})
	t.Run("python", func(t *testing.T) {
		py := testprog.RequirePython(t, "numpy", "HCCL_TEST_REQUIRE_NUMPY", "python3-numpy")
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			t.Fatal(err)
		}
		args := append(hostArgs(e, hf), "-x", "HCCL_LIBRARY="+filepath.Join(lib.Lib, "libhccl.so"),
			"-x", "PYTHONPATH="+filepath.Join(root, "python"), py, filepath.Join(root, "examples", "python", "allreduce.py"))
		wantSix(t, mustRun(t, b, args...))
	})
}

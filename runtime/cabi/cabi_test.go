package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// built is what every test here runs: hcclrun, libhccl.so, and the C
// programs compiled against it with cc, built once.
var built struct {
	once                      sync.Once
	err                       error
	hcclrun, example, badargs string
	graph                     string // examples/c/graph.c
	lib                       *testprog.CLib
}

func build(t *testing.T) {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "hccl-cabi-")
		if err != nil {
			built.err = err
			return
		}
		bins, err := testprog.Build(dir, "cmd/hcclrun")
		if err != nil {
			built.err = err
			return
		}
		built.hcclrun = bins[0]
		if built.lib, built.err = testprog.BuildCLib(dir); built.err != nil {
			return
		}
		built.example, built.badargs = filepath.Join(dir, "allreduce"), filepath.Join(dir, "badinput")
		if built.err = built.lib.Compile("examples/c/allreduce.c", built.example); built.err != nil {
			return
		}
		if built.err = built.lib.Compile("runtime/cabi/testdata/badinput.c", built.badargs); built.err != nil {
			return
		}
		built.graph = filepath.Join(dir, "graph")
		built.err = built.lib.Compile("examples/c/graph.c", built.graph)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.hcclrun != "" {
		os.RemoveAll(filepath.Dir(built.hcclrun))
	}
	os.Exit(code)
}

// hcclrun runs the built hcclrun with env added to the environment.
func hcclrun(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, built.hcclrun, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("hcclrun %s: timed out\n%s", strings.Join(args, " "), out)
	}
	return string(out), err
}

// wantOK checks that every one of n ranks printed "rank R/n ok".
func wantOK(t *testing.T, out string, n int) {
	t.Helper()
	for r := range n {
		if !strings.Contains(out, fmt.Sprintf("rank %d/%d ok\n", r, n)) {
			t.Fatalf("rank %d of %d did not report ok:\n%s", r, n, out)
		}
	}
}

// TestCExample: the C example checks every collective of hccl.h, every
// element type and reduction, exactly, over shared memory and over TCP,
// at rank counts that are and are not powers of two.
func TestCExample(t *testing.T) {
	build(t)
	for _, tc := range []struct {
		np  int
		env []string
	}{{4, nil}, {1, nil}, {3, nil}, {5, []string{"HCCL_SHM_DISABLE=1"}}} {
		t.Run(fmt.Sprintf("np%d%s", tc.np, strings.Join(tc.env, "")), func(t *testing.T) {
			out, err := hcclrun(t, tc.env, "-np", fmt.Sprint(tc.np), built.example)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			wantOK(t, out, tc.np)
		})
	}
}

// TestCBadInput: bad arguments through the C interface get their code and
// a message naming the rank, and leave the job working; a mismatch and an
// abort reach every rank with their own codes.
func TestCBadInput(t *testing.T) {
	build(t)
	t.Run("args", func(t *testing.T) {
		out, err := hcclrun(t, nil, "-np", "3", built.badargs, "args")
		if err != nil || strings.Count(out, " args ok\n") != 3 {
			t.Fatalf("%v\n%s", err, out)
		}
	})
	result := regexp.MustCompile(`(?m)^rank (\d) result (\d): (.*)$`)
	t.Run("mismatch", func(t *testing.T) {
		out, _ := hcclrun(t, nil, "-np", "3", built.badargs, "mismatch")
		ms := result.FindAllStringSubmatch(out, -1)
		named := false
		for _, m := range ms {
			if m[2] != "2" && m[2] != "3" { // hcclMismatch, or hcclAborted by a peer's
				t.Errorf("rank %s got result %s: %s", m[1], m[2], m[3])
			}
			named = named || m[2] == "2" && strings.Contains(m[3], "rank 0 called AllReduce(count=9")
		}
		if len(ms) == 0 || !named {
			t.Fatalf("want the ranks' results, one hcclMismatch naming rank 0's call:\n%s", out)
		}
	})
	t.Run("graphargs", func(t *testing.T) {
		out, err := hcclrun(t, nil, "-np", "3", built.badargs, "graphargs")
		if err != nil || strings.Count(out, " graphargs ok\n") != 3 {
			t.Fatalf("%v\n%s", err, out)
		}
	})
	// Every rank's Compile fails with hcclMismatch, naming what differs.
	for _, tc := range []struct{ mode, text string }{
		{"graphmismatch", "graph node 1: rank 0 recorded AllReduce float32 count 9"},
		{"graphcap", "fuses AllReduces up to"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			out, _ := hcclrun(t, nil, "-np", "3", built.badargs, tc.mode)
			ms := result.FindAllStringSubmatch(out, -1)
			for _, m := range ms {
				if m[2] != "2" || !strings.Contains(m[3], tc.text) {
					t.Errorf("rank %s got result %s (%s), want 2 (hcclMismatch) with %q", m[1], m[2], m[3], tc.text)
				}
			}
			if len(ms) != 3 {
				t.Fatalf("want every rank's result:\n%s", out)
			}
		})
	}
	for _, mode := range []string{"abort", "graphabort"} {
		t.Run(mode, func(t *testing.T) { testAbort(t, mode) })
	}
}

// testAbort: the last rank's hcclCommAbort reaches the others' call (a
// collective, or a graph's launch) as hcclAborted naming it.
func testAbort(t *testing.T, mode string) {
	result := regexp.MustCompile(`(?m)^rank (\d) result (\d): (.*)$`)
	out, err := hcclrun(t, nil, "-np", "3", built.badargs, mode)
	if err == nil {
		t.Errorf("hcclrun exited 0 after hcclCommAbort:\n%s", out)
	}
	// Rank 2 may be stopped by hcclrun before it prints what its
	// hcclCommAbort returned; the others print what the abort did to them.
	others := 0
	for _, m := range result.FindAllStringSubmatch(out, -1) {
		switch {
		case m[1] == "2" && m[2] != "0":
			t.Errorf("rank 2's hcclCommAbort returned %s: %s", m[2], m[3])
		case m[1] != "2" && (m[2] != "3" || !strings.Contains(m[3], "rank 2 called Abort")):
			t.Errorf("rank %s got result %s (%s), want 3 (hcclAborted) naming rank 2", m[1], m[2], m[3])
		case m[1] != "2":
			others++
		}
	}
	if others == 0 {
		t.Fatalf("no rank reported what rank 2's abort did to it:\n%s", out)
	}
}

// TestCGraph: the C graph example records a step of every collective
// over several element types, launches it three times with new data and
// checks every result exactly, fused and unfused, over shared memory and
// over TCP, at rank counts that are and are not powers of two.
func TestCGraph(t *testing.T) {
	build(t)
	line := regexp.MustCompile(`(?m)^rank (\d+)/(\d+) steps (\d+) unfused (\d+) nodes (\d+)$`)
	for _, tc := range []struct {
		np  int
		env []string
	}{{3, nil}, {1, nil}, {4, []string{"HCCL_SHM_DISABLE=1"}}} {
		t.Run(fmt.Sprintf("np%d%s", tc.np, strings.Join(tc.env, "")), func(t *testing.T) {
			out, err := hcclrun(t, tc.env, "-np", fmt.Sprint(tc.np), built.graph)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			wantOK(t, out, tc.np)
			ms := line.FindAllStringSubmatch(out, -1)
			if len(ms) != tc.np {
				t.Fatalf("want every rank's steps:\n%s", out)
			}
			for _, m := range ms {
				// More than one rank: the six small float32 AllReduces
				// and the two int32 ones fuse (the example's comments).
				fused, _ := strconv.Atoi(m[3])
				unfused, _ := strconv.Atoi(m[4])
				if tc.np > 1 && fused >= unfused {
					t.Errorf("rank %s: %s steps fused, %s unfused: want fewer fused", m[1], m[3], m[4])
				}
			}
		})
	}
}

// TestMPIBenchOnHCCL: the MPI twin of hcclrun bench, compiled against
// libhccl.so through bench/mpi/onhccl/mpi.h (bench/cabi's C side), runs
// every collective out of place and in place with its exact check.
func TestMPIBenchOnHCCL(t *testing.T) {
	build(t)
	bin := filepath.Join(t.TempDir(), "mpibench.hccl")
	if err := built.lib.Compile("bench/mpi/mpibench.c", bin, "bench/mpi/onhccl"); err != nil {
		t.Fatal(err)
	}
	for _, reg := range []string{"0", "1"} {
		out, err := hcclrun(t, nil, "-np", "3", bin, "-o", "all", "-b", "0", "-e", "64K", "-f", "8", "-n", "2", "-w", "1", "-c", "1", "-R", reg)
		if err != nil || !strings.Contains(out, "# Out of bounds values : 0 OK") {
			t.Fatalf("-R %s: %v\n%s", reg, err, out)
		}
	}
	// --step, the MPI twin of hcclrun bench --graph's calls row.
	out, err := hcclrun(t, nil, "-np", "3", bin, "--step", "5x4K,300K,3x12", "--rounds", "2", "-n", "2", "-w", "1", "-c", "1")
	if err != nil || !strings.Contains(out, "# Out of bounds values : 0 OK") || !strings.Contains(out, "  calls      9  ") {
		t.Fatalf("--step: %v\n%s", err, out)
	}
}

// TestPythonExample: the hccl package (ctypes over libhccl.so) runs the
// Python examples, every collective on NumPy arrays checked exactly, and
// a graph of them replayed three times against the same calls one by one.
func TestPythonExample(t *testing.T) {
	build(t)
	py := testprog.RequirePython(t, "numpy", "HCCL_TEST_REQUIRE_NUMPY", "python3-numpy")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"HCCL_LIBRARY=" + filepath.Join(built.lib.Lib, "libhccl.so"), "PYTHONPATH=" + filepath.Join(root, "python")}
	for _, tc := range []struct{ np, script string }{{"4", "allreduce.py"}, {"3", "allreduce.py"}, {"3", "graph.py"}} {
		out, err := hcclrun(t, env, "-np", tc.np, py, filepath.Join(root, "examples", "python", tc.script))
		if err != nil {
			t.Fatalf("%s np %s: %v\n%s", tc.script, tc.np, err, out)
		}
		n := int(tc.np[0] - '0')
		wantOK(t, out, n)
	}
}

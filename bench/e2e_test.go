package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/testprog"
)

// buildHcclrun builds the real hcclrun into a temporary directory.
func buildHcclrun(t *testing.T) string {
	t.Helper()
	return buildCommand(t, t.TempDir(), "hcclrun")
}

// buildCommand builds cmd/NAME into dir and returns its path.
func buildCommand(t *testing.T, dir, name string) string {
	t.Helper()
	bins, err := testprog.Build(dir, "cmd/"+name)
	if err != nil {
		t.Fatal(err)
	}
	return bins[0]
}

// TestBenchPlot runs `hcclrun bench --plot` with hcclrun-plot next to
// hcclrun, as make builds them, and checks the SVG; without hcclrun-plot
// (nor on PATH) the same command is a usage error that names it, before
// any rank starts.
func TestBenchPlot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildCommand(t, dir, "hcclrun")
	plot := filepath.Join(t.TempDir(), "busbw.svg")
	args := []string{"bench", "-np", "2", "-o", "allreduce", "-b", "1K", "-e", "64K", "-n", "2", "-w", "1", "--plot", plot, "--timeout", "100"}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "hcclrun-plot") {
		t.Errorf("without hcclrun-plot: %v, want exit status 2 naming it\n%s", err, out)
	}
	buildCommand(t, dir, "hcclrun-plot")
	cmd = exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hcclrun bench --plot: %v\n%s", err, out)
	}
	b, err := os.ReadFile(plot)
	if err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "allreduce") {
		t.Fatalf("the plot: %v, %d bytes, <svg and allreduce in it: %v", err, len(b), strings.Contains(string(b), "allreduce"))
	}
}

// TestBenchEndToEnd runs `hcclrun bench` as a user would: two real rank
// processes of the built binary, every collective from 8 bytes to 64 KiB,
// and reads its table (nccl-tests' 13 columns) and its JSON.
func TestBenchEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildHcclrun(t)
	jsonPath := filepath.Join(t.TempDir(), "rows.json")
	cmd := exec.CommandContext(ctx, bin, "bench", "-np", "2", "-o", "all", "-b", "8", "-e", "64K",
		"-n", "3", "-w", "1", "--json", jsonPath, "--timeout", "150")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hcclrun bench: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}

	const sizes = 14 // 8, 16, ..., 64K
	rows := checkRows(t, out, "float")
	for _, c := range collNames {
		if rows[c] != sizes {
			t.Errorf("%s: %d rows, want %d", c, rows[c], sizes)
		}
	}

	rep := readReport(t, jsonPath)
	if rep.Ranks != 2 || len(rep.Rows) != sizes*len(collNames) {
		t.Fatalf("--json: %d ranks, %d rows; want 2 and %d", rep.Ranks, len(rep.Rows), sizes*len(collNames))
	}
	for _, r := range rep.Rows {
		if r.OutOfPlace.Wrong != 0 || r.OutOfPlace.TimeUS <= 0 || r.OutOfPlace.MedianUS <= 0 || r.Ranks != 2 {
			t.Errorf("--json row %+v", r)
		}
		if (r.InPlace == nil) == (r.Coll != "alltoall" && r.Coll != "alltoallv") {
			t.Errorf("--json %s: in-place result %v", r.Coll, r.InPlace)
		}
	}
}

// checkRows reads the table `hcclrun bench` printed: every row has
// nccl-tests' 13 columns, data of type typ and no wrong values, and the
// verdict says OK. It returns the rows per collective.
func checkRows(t *testing.T, out []byte, typ string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	coll := ""
	for _, line := range strings.Split(string(out), "\n") {
		if c, ok := strings.CutPrefix(line, "# Collective: "); ok {
			coll = c
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 13 {
			t.Fatalf("row with %d fields, want 13: %q", len(f), line)
		}
		rows[coll]++
		if f[2] != typ {
			t.Errorf("%s: type %q, want %s", coll, f[2], typ)
		}
		for _, w := range []string{f[8], f[12]} {
			if w != "0" && !(w == "N/A" && (coll == "alltoall" || coll == "alltoallv")) {
				t.Errorf("%s: #wrong %q in %q", coll, w, line)
			}
		}
	}
	if !strings.Contains(string(out), "# Out of bounds values : 0 OK") {
		t.Errorf("no OK verdict in\n%s", out)
	}
	return rows
}

// TestBenchInPlaceReads checks end to end the payloads that go over
// in place (AllGather, AlltoAll, AlltoAllV) at np 3 with payloads from 256
// KiB to 4 MiB, in plain Go slices (-R 0): wholly through the links'
// pipes, partly (the pipes hold 1 MiB), and mostly with process_vm_readv
// (runtime/transport/shmlink's splice.go), with the pipes whatever the
// host's probe says (HCCL_SHM_SPLICE_DISABLE=0), then without them (=1);
// and in MemAlloc memory (-R 1), copied out of the receiver's mapping of
// the sender's. Over several calls in a row, out of place and in place,
// checked exactly by the bench.
func TestBenchInPlaceReads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildHcclrun(t)
	for _, way := range []struct{ env, register string }{
		{"HCCL_SHM_SPLICE_DISABLE=0", "0"}, {"HCCL_SHM_SPLICE_DISABLE=1", "0"}, {"HCCL_SHM_SPLICE_DISABLE=0", "1"},
	} {
		cmd := exec.CommandContext(ctx, bin, "bench", "-np", "3", "-o", "allgather,alltoall,alltoallv",
			"-b", "768K", "-e", "12M", "-f", "4", "-n", "4", "-w", "1", "-R", way.register, "--timeout", "150")
		cmd.Env = append(os.Environ(), way.env)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s hcclrun bench -R %s: %v\nstdout:\n%s\nstderr:\n%s", way.env, way.register, err, out, stderr.String())
		}
		rows := checkRows(t, out, "float")
		for _, c := range []string{"allgather", "alltoall", "alltoallv"} {
			if rows[c] != 3 {
				t.Errorf("%s -R %s %s: %d rows, want 3 (768K, 3M, 12M)", way.env, way.register, c, rows[c])
			}
		}
	}
}

// TestBenchStreamingReductions checks end to end the reductions of calls
// large enough to store around the cache (runtime's streamMin,
// reduce.StreamKernel): out of place and in place, at np 3, checked
// exactly by the bench.
func TestBenchStreamingReductions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildHcclrun(t)
	for dtype, typ := range map[string]string{"float32": "float", "int64": "int64"} {
		cmd := exec.CommandContext(ctx, bin, "bench", "-np", "3", "-o", "allreduce,reducescatter,reduce",
			"-d", dtype, "-b", "48M", "-e", "48M", "-n", "2", "-w", "1", "--timeout", "150")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s hcclrun bench: %v\nstdout:\n%s\nstderr:\n%s", dtype, err, out, stderr.String())
		}
		rows := checkRows(t, out, typ)
		for _, c := range []string{"allreduce", "reducescatter", "reduce"} {
			if rows[c] != 1 {
				t.Errorf("%s %s: %d rows, want 1", dtype, c, rows[c])
			}
		}
	}
}

// readReport reads the --json file at path.
func readReport(t *testing.T, path string) jsonReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep jsonReport
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("--json: %v", err)
	}
	return rep
}

// TestBenchUsage checks that flag mistakes are usage errors (exit status 2)
// found before any rank starts.
func TestBenchUsage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := buildHcclrun(t)
	for _, args := range [][]string{
		{"-c", "2"}, {"-R", "2"}, {"-o", "allgatherv"}, {"-d", "complex"}, {"-r", "2"}, {"-b", "1M", "-e", "1K"},
		{"--redop", "avg", "-d", "int32"}, {"--plot", "out.pdf"}, {"-f", "2", "-i", "8"},
		{"--algos", "bogus"}, {"-o", "broadcast", "--algos", "rhd"}, {"--algos", "ring", "--rounds", "0"},
		{"--rounds", "3"}, {"--algos", "ring,,rhd"},
		{"--first", "0"}, {"--first", "-1"}, {"--first", "3", "--algos", "ring"}, {"--first", "3", "-n", "4"},
		{"--first", "3", "-w", "0"}, {"--first", "3", "--plot", "out.svg"},
		{"--step", "4x4M"}, {"--graph", "-o", "allgather"}, {"--graph", "-b", "1K"}, {"--graph", "--step", "3x5"},
		{"--graph", "--step", "0x4K"}, {"--graph", "--rounds", "0"}, {"--graph", "--first", "3"},
	} {
		cmd := exec.CommandContext(ctx, bin, append([]string{"bench", "-np", "2"}, args...)...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("hcclrun bench %v: %v, want exit status 2\n%s", args, err, out)
		}
	}
}

// TestBenchAlgos runs `hcclrun bench --algos` at np 3: a row per algorithm
// and size with the algorithm in a 14th field, every result checked, and
// in the JSON each row's rounds as samples whose median is its time.
func TestBenchAlgos(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildHcclrun(t)
	jsonPath := filepath.Join(t.TempDir(), "rows.json")
	algos := []string{"ring", "rhd", "pat", "auto"}
	const rounds = 3
	cmd := exec.CommandContext(ctx, bin, "bench", "-np", "3", "-o", "allgather,reducescatter", "-b", "24", "-e", "24K",
		"-f", "32", "-n", "3", "-w", "1", "--algos", strings.Join(algos, ","), "--rounds", fmt.Sprint(rounds),
		"--json", jsonPath, "--timeout", "150")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hcclrun bench --algos: %v\n%s", err, out)
	}
	const sizes = 3 // 24, 768, 24K
	seen := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 14 || f[8] != "0" || f[12] != "0" {
			t.Fatalf("row %q: want 14 fields and no wrong element", line)
		}
		seen[f[13]]++
	}
	for _, a := range algos {
		if seen[a] != 2*sizes {
			t.Errorf("%d rows of %s, want %d\n%s", seen[a], a, 2*sizes, out)
		}
	}
	rep := readReport(t, jsonPath)
	if rep.Rounds != rounds || len(rep.Algos) != len(algos) || len(rep.Rows) != 2*sizes*len(algos) {
		t.Fatalf("--json: rounds %d, algos %v, %d rows", rep.Rounds, rep.Algos, len(rep.Rows))
	}
	for _, r := range rep.Rows {
		for _, res := range []*Result{&r.OutOfPlace, r.InPlace} {
			if len(res.Samples) != rounds || res.TimeUS != median(slices.Clone(res.Samples)) {
				t.Errorf("--json %s %s %d: time %v, samples %v; want the median of %d", r.Coll, r.Algo, r.Bytes, res.TimeUS, res.Samples, rounds)
			}
		}
	}
}

// TestBenchCPUProfile checks that --cpuprofile writes a profile per rank,
// creating the directory when it is missing.
func TestBenchCPUProfile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildHcclrun(t)
	dir := filepath.Join(t.TempDir(), "not", "yet")
	cmd := exec.CommandContext(ctx, bin, "bench", "-np", "2", "-o", "allreduce", "-b", "8", "-e", "8", "-n", "1000", "--cpuprofile", dir, "--timeout", "100")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hcclrun bench --cpuprofile: %v\n%s", err, out)
	}
	for r := range 2 {
		fi, err := os.Stat(filepath.Join(dir, fmt.Sprintf("rank-%d.pprof", r)))
		if err != nil || fi.Size() == 0 {
			t.Errorf("rank %d's profile: %v (size %v)", r, err, fi)
		}
	}
}

// TestBenchFirst runs `hcclrun bench --first` at np 2: a row per
// collective and size, each measured by a job of its own (no pid of one
// case's ranks in another's), with its 5 call times listed under it, all
// positive, whose mean is the row's mean column, and no wrong element; the
// JSON keeps the calls and the job. Timing values are not asserted.
func TestBenchFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildHcclrun(t)
	jsonPath := filepath.Join(t.TempDir(), "rows.json")
	const calls = 5
	cmd := exec.CommandContext(ctx, bin, "bench", "-np", "2", "--first", fmt.Sprint(calls), "-o", "allreduce,allgather",
		"-b", "16", "-e", "1M", "-f", "256", "--json", jsonPath, "--timeout", "100")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hcclrun bench --first: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	const sizes = 3 // 16, 4K, 1M
	type tableRow struct {
		coll        string
		mean        float64
		calls, pids []string
	}
	var rows []tableRow
	coll := ""
	for _, line := range strings.Split(string(out), "\n") {
		if c, ok := strings.CutPrefix(line, "# Collective: "); ok {
			coll = c
			continue
		}
		if v, ok := strings.CutPrefix(line, "# first calls (us):"); ok && len(rows) > 0 {
			rows[len(rows)-1].calls = strings.Fields(v)
			continue
		}
		if v, ok := strings.CutPrefix(line, "# job:"); ok && len(rows) > 0 {
			for _, rank := range strings.Split(v, ",") {
				if f := strings.Fields(rank); len(f) == 6 && f[2] == "pid" {
					rows[len(rows)-1].pids = append(rows[len(rows)-1].pids, f[3])
				}
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 10 || f[9] != "0" {
			t.Fatalf("row %q: want 10 fields and #wrong 0", line)
		}
		var mean float64
		if _, err := fmt.Sscan(f[6], &mean); err != nil {
			t.Fatalf("row %q: mean %q: %v", line, f[6], err)
		}
		rows = append(rows, tableRow{coll: coll, mean: mean})
	}
	if len(rows) != 2*sizes {
		t.Fatalf("%d rows, want %d\n%s", len(rows), 2*sizes, out)
	}
	seen := map[string]int{}
	for i, r := range rows {
		if len(r.calls) != calls {
			t.Errorf("row %d (%s): %d call times %v, want %d", i, r.coll, len(r.calls), r.calls, calls)
		}
		var sum float64
		for _, c := range r.calls {
			var us float64
			if _, err := fmt.Sscan(c, &us); err != nil || us <= 0 {
				t.Errorf("row %d (%s): call time %q (%v), want a positive number", i, r.coll, c, err)
			}
			sum += us
		}
		// The table prints about four significant digits.
		if m := sum / calls; abs(m-r.mean) > 1e-3*r.mean+0.01 {
			t.Errorf("row %d (%s): mean column %v, the calls' mean %v", i, r.coll, r.mean, m)
		}
		if len(r.pids) != 2 {
			t.Errorf("row %d (%s): job pids %v, want 2", i, r.coll, r.pids)
		}
		for _, p := range r.pids {
			if j, ok := seen[p]; ok {
				t.Errorf("pid %s ran rows %d and %d: want a fresh job per case", p, j, i)
			}
			seen[p] = i
		}
	}

	rep := readReport(t, jsonPath)
	if rep.First != calls || rep.Iters != calls || rep.Warmup != 0 || len(rep.Rows) != 2*sizes {
		t.Fatalf("--json: first %d, iters %d, warmup %d, %d rows", rep.First, rep.Iters, rep.Warmup, len(rep.Rows))
	}
	for i, r := range rep.Rows {
		res := r.OutOfPlace
		var sum float64
		for _, us := range res.CallsUS {
			sum += us
		}
		if len(res.CallsUS) != calls || res.Wrong != 0 || r.InPlace != nil || abs(sum/calls-res.TimeUS) > 1e-9*res.TimeUS ||
			res.FirstUS != res.CallsUS[0] || res.SlowestUS != slices.Max(res.CallsUS) || len(r.Job) != 2 {
			t.Errorf("--json row %d: %+v", i, r)
			continue
		}
		if r.Job[0].Pid == 0 || len(rows[i].pids) == 0 || fmt.Sprint(r.Job[0].Pid) != rows[i].pids[0] {
			t.Errorf("--json row %d: job %+v, the table's pids %v", i, r.Job, rows[i].pids)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestBenchGraph runs `hcclrun bench --graph`: issue 36's step at np 2 and
// a step of odd sizes (fused runs, an unfused call between them) at np 3,
// each with a calls and a graph row, every element checked, and in the
// JSON each mode's rounds.
func TestBenchGraph(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := buildHcclrun(t)
	for _, tc := range []struct {
		np          int
		step        string
		calls, elts int
	}{
		{2, DefaultStep, 68, 64*16<<10/4 + 4*4<<20/4},
		{3, "5x4K,300K,3x12,1x4", 10, 5*1024 + 300*256 + 3*3 + 1},
	} {
		jsonPath := filepath.Join(t.TempDir(), "step.json")
		const rounds = 2
		cmd := exec.CommandContext(ctx, bin, "bench", "-np", fmt.Sprint(tc.np), "--graph", "--step", tc.step,
			"-n", "2", "-w", "1", "--rounds", fmt.Sprint(rounds), "-c", "1", "--json", jsonPath, "--timeout", "150")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("hcclrun bench --graph --step %s: %v\n%s", tc.step, err, out)
		}
		modes := map[string]bool{}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || strings.HasPrefix(line, "#") {
				continue
			}
			if len(f) != 11 || f[10] != "0" {
				t.Errorf("--step %s: row %q, want 11 fields and #wrong 0", tc.step, line)
				continue
			}
			modes[f[0]] = true
		}
		if !modes[stepCalls] || !modes[stepGraph] || len(modes) != 2 || !strings.Contains(string(out), "# calls/graph: ") {
			t.Errorf("--step %s: modes %v, want calls and graph and the ratio line\n%s", tc.step, modes, out)
		}
		rep := readReport(t, jsonPath)
		if len(rep.Steps) != 2 || rep.Rounds != rounds {
			t.Fatalf("--json: %d step rows, %d rounds; want 2 and %d", len(rep.Steps), rep.Rounds, rounds)
		}
		for _, r := range rep.Steps {
			if r.Wrong != 0 || r.Ranks != tc.np || r.Count != int64(tc.elts) || r.TimeUS <= 0 || len(r.Samples) != rounds ||
				(r.Mode == stepCalls) != (r.Colls == tc.calls) || r.Colls < 1 || (r.Mode == stepGraph) != (r.CompileUS > 0) {
				t.Errorf("--json --step %s: row %+v", tc.step, r)
			}
		}
	}
}

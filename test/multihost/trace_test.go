package multihost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceThreeHosts: examples/train on 6 ranks over the 3 simulated
// hosts with --trace and --report-json. The merged timeline has one
// process per host, two rank tracks in each, and every rank's clock
// offset measured against the launcher's with an error bar (half a round
// trip over the hosts' veth links: 23-40 us when this was written; the
// check allows 50 ms for a loaded machine); the report
// comes from all 6 ranks, their AllReduces run by the hierarchical or
// flat algorithms the selector chose.
func TestTraceThreeHosts(t *testing.T) {
	e, b, hf := setup(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil { // the ranks may run as another user
		t.Fatal(err)
	}
	traces, report := filepath.Join(dir, "trace"), filepath.Join(dir, "report.json")
	mustRun(t, b, append(hostArgs(e, hf), "--trace", traces, "--report-json", report,
		filepath.Join(b, "train"), "-epochs", "2")...)
	merged := filepath.Join(dir, "job.json")
	mustRun(t, b, "trace", "merge", traces, "-o", merged)

	raw, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	var tl struct {
		TraceEvents []struct {
			Name, Cat, Ph string
			Pid, Tid      int
			Args          map[string]any
		} `json:"traceEvents"`
		Metadata struct {
			Clocks []struct {
				Rank    int    `json:"rank"`
				Host    string `json:"host"`
				ErrorNs int64  `json:"error_ns"`
			} `json:"clocks"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &tl); err != nil {
		t.Fatal(err)
	}
	processes := map[int]string{}
	tracks := map[int]map[int]bool{}
	calls := map[int]int{}
	for _, ev := range tl.TraceEvents {
		switch {
		case ev.Ph == "M" && ev.Name == "process_name":
			processes[ev.Pid] = ev.Args["name"].(string)
		case ev.Ph == "M" && ev.Name == "thread_name":
			if tracks[ev.Pid] == nil {
				tracks[ev.Pid] = map[int]bool{}
			}
			tracks[ev.Pid][ev.Tid] = true
		case ev.Cat == "call":
			calls[ev.Tid]++
		}
	}
	if len(processes) != 3 {
		t.Fatalf("%d processes, want one per host: %v", len(processes), processes)
	}
	for pid, ts := range tracks {
		if len(ts) != 2 {
			t.Errorf("process %d (%s) has %d rank tracks, want 2", pid, processes[pid], len(ts))
		}
	}
	for tid := 1; tid <= 6; tid++ {
		if calls[tid] == 0 || calls[tid] != calls[1] {
			t.Errorf("rank %d has %d calls, rank 0 %d", tid-1, calls[tid], calls[1])
		}
	}
	if len(tl.Metadata.Clocks) != 6 {
		t.Fatalf("%d clocks, want 6", len(tl.Metadata.Clocks))
	}
	for _, c := range tl.Metadata.Clocks {
		t.Logf("rank %d on %s: clock error bar %d ns", c.Rank, c.Host, c.ErrorNs)
		if c.ErrorNs < 0 || c.ErrorNs > 50_000_000 {
			t.Errorf("rank %d: error bar %d ns", c.Rank, c.ErrorNs)
		}
	}

	var rep struct {
		Ranks   int   `json:"ranks"`
		Missing []int `json:"missing_ranks"`
		Rows    []struct {
			Coll  string           `json:"coll"`
			Algos map[string]int64 `json:"algos"`
		} `json:"rows"`
	}
	rb, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rb, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Ranks != 6 || len(rep.Missing) != 0 || len(rep.Rows) == 0 || rep.Rows[0].Coll != "AllReduce" {
		t.Fatalf("report %s", strings.TrimSpace(string(rb)))
	}
	t.Logf("report: %s", strings.Join(strings.Fields(string(rb)), " "))
}

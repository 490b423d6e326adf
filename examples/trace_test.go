package examples_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTraceTrain: a 4-rank train run with --trace and --report-json.
// Every rank leaves a trace file; hcclrun trace merge makes one timeline
// that encoding/json loads into the Trace Event Format's shape: one
// process (one host), a named track per rank, every rank the same calls
// in the same order, and inside every call its steps and waits (complete
// events nested in time on the rank's track); the report counts every
// rank's AllReduces.
func TestTraceTrain(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	traces, report := filepath.Join(dir, "trace"), filepath.Join(dir, "report.json")
	out := run(t, bin, "-np", "4", "--trace", traces, "--report", "--report-json", report,
		filepath.Join(bin, "train"), "-epochs", "3")
	if !regexp.MustCompile(`(?m)^AllReduce\s+<=256 B\s+\d+`).MatchString(out) {
		t.Errorf("--report printed no AllReduce row:\n%s", out)
	}
	merged := filepath.Join(dir, "job.json")
	run(t, bin, "trace", "merge", traces, "-o", merged)

	b, err := os.ReadFile(merged)
	if err != nil {
		t.Fatal(err)
	}
	var tl struct {
		TraceEvents []struct {
			Name, Cat, Ph string
			Ts, Dur       float64
			Pid, Tid      int
			Args          map[string]any
		} `json:"traceEvents"`
		DisplayTimeUnit string `json:"displayTimeUnit"`
		Metadata        struct {
			Clocks []struct {
				Rank    int   `json:"rank"`
				ErrorNs int64 `json:"error_ns"`
			} `json:"clocks"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &tl); err != nil {
		t.Fatalf("merged timeline is not JSON: %v", err)
	}
	type span struct{ ts, end float64 }
	processes, tracks := map[int]string{}, map[int]string{}
	calls := map[int][]string{}   // by track: names in order
	callSpans := map[int][]span{} // by track
	var inner []struct {
		tid  int
		s    span
		kind string
	}
	for _, e := range tl.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "process_name":
			processes[e.Pid] = e.Args["name"].(string)
		case e.Ph == "M" && e.Name == "thread_name":
			tracks[e.Tid] = e.Args["name"].(string)
		case e.Ph == "X" && e.Cat == "call":
			calls[e.Tid] = append(calls[e.Tid], e.Name)
			callSpans[e.Tid] = append(callSpans[e.Tid], span{e.Ts, e.Ts + e.Dur})
			if e.Args["algo"] == "" || e.Args["bytes"] == nil || e.Args["seq"] == nil {
				t.Errorf("call without algorithm, bytes or number: %+v", e)
			}
		case e.Ph == "X" && (e.Cat == "step" || e.Cat == "wait"):
			inner = append(inner, struct {
				tid  int
				s    span
				kind string
			}{e.Tid, span{e.Ts, e.Ts + e.Dur}, e.Cat})
		case e.Ph == "X":
			t.Errorf("complete event of unknown category: %+v", e)
		}
	}
	if len(processes) != 1 || !strings.HasPrefix(processes[1], "host ") {
		t.Errorf("processes %v, want one host", processes)
	}
	for r := range 4 {
		if tracks[r+1] != "rank "+string(rune('0'+r)) {
			t.Errorf("tracks %v, want rank %d on track %d", tracks, r, r+1)
		}
	}
	if len(calls[1]) < 10 {
		t.Fatalf("rank 0 has %d calls, want a train run's AllReduces", len(calls[1]))
	}
	for tid := 2; tid <= 4; tid++ {
		if strings.Join(calls[tid], ",") != strings.Join(calls[1], ",") {
			t.Errorf("track %d's calls differ from rank 0's: %d against %d", tid, len(calls[tid]), len(calls[1]))
		}
	}
	// Every step and wait lies inside one of its track's calls (times
	// are microseconds printed to the nanosecond).
	const eps = 0.002
	kinds := map[string]int{}
	for _, in := range inner {
		kinds[in.kind]++
		ok := false
		for _, c := range callSpans[in.tid] {
			if in.s.ts >= c.ts-eps && in.s.end <= c.end+eps {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("%s [%v, %v] on track %d lies in none of its calls", in.kind, in.s.ts, in.s.end, in.tid)
			break
		}
	}
	if kinds["step"] < len(calls[1]) || kinds["wait"] == 0 {
		t.Errorf("%d steps and %d waits for %d calls per rank", kinds["step"], kinds["wait"], len(calls[1]))
	}
	if len(tl.Metadata.Clocks) != 4 {
		t.Errorf("metadata.clocks has %d ranks, want 4", len(tl.Metadata.Clocks))
	}
	for _, c := range tl.Metadata.Clocks {
		if c.ErrorNs < 0 {
			t.Errorf("rank %d measured no clock offset", c.Rank)
		}
	}

	var rep struct {
		Ranks int `json:"ranks"`
		Rows  []struct {
			Coll  string           `json:"coll"`
			Calls int64            `json:"calls"`
			Algos map[string]int64 `json:"algos"`
		} `json:"rows"`
		Missing []int `json:"missing_ranks"`
	}
	rb, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rb, &rep); err != nil {
		t.Fatal(err)
	}
	var allreduces int64
	for _, row := range rep.Rows {
		if row.Coll == "AllReduce" {
			allreduces += row.Calls
		}
	}
	if rep.Ranks != 4 || len(rep.Missing) != 0 || allreduces != int64(len(calls[1])) {
		t.Errorf("report: %+v; want 4 ranks, none missing, %d AllReduces per rank (the trace's)", rep, len(calls[1]))
	}
}

package launcher

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
)

// TestRankLimit: more than MaxRanks ranks, however given, is a usage error
// found before anything is allocated per rank (-np 99999999999 once grew
// to 480 MB building slots first).
func TestRankLimit(t *testing.T) {
	tests := []struct {
		name string
		job  Job
		msg  string
	}{
		{"np", Job{Program: "/bin/true", NP: 99999999999}, "np is 99999999999, more than the 65536 ranks a job may have"},
		{"np just over", Job{Program: "/bin/true", NP: MaxRanks + 1}, "np is 65537, more than"},
		{"hosts", Job{Program: "/bin/true", Hosts: []Host{{Ranks: math.MaxInt}, {Ranks: math.MaxInt}}}, "the hosts hold more than the 65536 ranks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			err := tt.job.Run(context.Background())
			goruntime.ReadMemStats(&after)
			if !errors.Is(err, ErrUsage) || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Run: %v (exit %d), want a usage error %q", err, ExitCode(err), tt.msg)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("allocated %d bytes before refusing", grew)
			}
			if _, err := tt.job.RankTable("", ""); !errors.Is(err, ErrUsage) {
				t.Errorf("RankTable: %v, want a usage error", err)
			}
		})
	}
}

// TestCrowdedWarning: a host with more than crowdedPerCPU ranks per CPU
// gets one warning line, naming it; one at the limit gets none.
func TestCrowdedWarning(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, np := range []int{crowdedPerCPU * len(cpus), crowdedPerCPU*len(cpus) + 1} {
		var buf bytes.Buffer
		j := &Job{Program: "/bin/true", NP: np, Logger: slog.New(slog.NewTextHandler(&buf, nil))}
		if _, err := j.resolve(true); err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(buf.String(), "\n")
		want := 0
		if np > crowdedPerCPU*len(cpus) {
			want = 1
		}
		if lines != want || want == 1 && (!strings.Contains(buf.String(), "heavily oversubscribed") || !strings.Contains(buf.String(), "ranks="+strconv.Itoa(np))) {
			t.Errorf("np %d on %d CPUs: %d lines %q, want %d warning", np, len(cpus), lines, buf.String(), want)
		}
	}
}

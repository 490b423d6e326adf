package runtime

import (
	"path/filepath"
	"testing"

	"github.com/hcclrun/hcclrun/ranktable"
)

func TestReadTableFacts(t *testing.T) {
	tests := []struct {
		name      string
		servers   []ranktable.ServerSpec
		rank      int
		per, cpus int
	}{
		{"one server, bound", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2, CPUs: []int{0, 1, 2, 3}}}, 1, 0, 4},
		{"one server, unbound", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}}, 0, 0, 0},
		{"oversubscribed, one CPU each in turn", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 3, CPUs: []int{4, 5}}}, 2, 0, 2},
		{"two servers, the other bound", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}, {HostAddr: "10.0.0.2", Ranks: 2, CPUs: []int{0, 1}}}, 1, 2, 0},
		{"two servers, this one bound", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}, {HostAddr: "10.0.0.2", Ranks: 2, CPUs: []int{0, 1}}}, 3, 2, 2},
		{"servers of different sizes", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}, {HostAddr: "10.0.0.2", Ranks: 3}}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := ranktable.Generate(ranktable.Spec{Servers: tt.servers})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "table.json")
			if err := ranktable.WriteFile(path, table); err != nil {
				t.Fatal(err)
			}
			got, err := readTableFacts(path, table.Size(), tt.rank)
			if err != nil {
				t.Fatal(err)
			}
			if got.perServer != tt.per || got.serverCPUs != tt.cpus {
				t.Errorf("rank %d: per server %d, server CPUs %d; want %d, %d", tt.rank, got.perServer, got.serverCPUs, tt.per, tt.cpus)
			}
		})
	}
	if _, err := readTableFacts(filepath.Join(t.TempDir(), "missing.json"), 2, 0); err == nil {
		t.Error("a missing table file read without an error")
	}
}

package runtime

import (
	"path/filepath"
	"testing"

	"github.com/hcclrun/hcclrun/ranktable"
)

func TestReadTableFacts(t *testing.T) {
	tests := []struct {
		name    string
		servers []ranktable.ServerSpec
		rank    int
		layout  string
		cpus    int
	}{
		{"one server, bound", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2, CPUs: []int{0, 1, 2, 3}}}, 1, "1 server", 4},
		{"one server, unbound", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}}, 0, "1 server", 0},
		{"oversubscribed, one CPU each in turn", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 3, CPUs: []int{4, 5}}}, 2, "1 server", 2},
		{"two servers, the other bound", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}, {HostAddr: "10.0.0.2", Ranks: 2, CPUs: []int{0, 1}}}, 1, "2+2", 0},
		{"two servers, this one bound", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}, {HostAddr: "10.0.0.2", Ranks: 2, CPUs: []int{0, 1}}}, 3, "2+2", 2},
		{"servers of different sizes", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}, {HostAddr: "10.0.0.2", Ranks: 3}}, 0, "2+3", 0},
		{"2+1", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 2}, {HostAddr: "10.0.0.2", Ranks: 1}}, 2, "2+1", 0},
		{"3+2+1", []ranktable.ServerSpec{{HostAddr: "10.0.0.1", Ranks: 3}, {HostAddr: "10.0.0.2", Ranks: 2}, {HostAddr: "10.0.0.3", Ranks: 1, CPUs: []int{1}}}, 5, "3+2+1", 1},
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
			if got.layout.String() != tt.layout || got.serverCPUs != tt.cpus || !got.fromTable {
				t.Errorf("rank %d: servers %s, server CPUs %d; want %s, %d", tt.rank, got.layout, got.serverCPUs, tt.layout, tt.cpus)
			}
			if got.layout != nil {
				first := 0
				for g, ss := range tt.servers {
					for i, r := range got.layout.Members(g) {
						if r != first+i {
							t.Errorf("server %d holds ranks %v, want them from %d on", g, got.layout.Members(g), first)
						}
					}
					first += ss.Ranks
				}
			}
		})
	}
	if _, err := readTableFacts(filepath.Join(t.TempDir(), "missing.json"), 2, 0); err == nil {
		t.Error("a missing table file read without an error")
	}
}

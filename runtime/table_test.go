package runtime

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/ranktable"
	"github.com/hcclrun/hcclrun/shm"
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

// TestWaitPolicy: a rank bound to one CPU of a server whose ranks have a
// CPU each spins (serverCPUs says so); it yields when the server's ranks
// outnumber its CPUs, bound or not, and sleeps at once in a crowd.
func TestWaitPolicy(t *testing.T) {
	spinning := 200 * time.Microsecond
	tests := []struct {
		name       string
		local      int
		serverCPUs int
		cpuList    string
		spins      bool
	}{
		{"bound, a CPU each", 2, 2, "1", true},
		{"bound, oversubscribed", 4, 2, "1", false},
		{"unbound, enough CPUs", 2, 0, "0-1", true},
		{"unbound, oversubscribed", 4, 0, "0-1", false},
	}
	for _, n := range []int{2*yieldCrowd + 1, 256} {
		if spin, yield, wake := waitPolicy(n, 0, "0-1"); spin != 0 || yield != 0 || wake != shm.CrowdWakePeriod {
			t.Errorf("%d ranks on 2 CPUs: spin %v, yield %v, wake %v; want to sleep at once, for up to %v", n, spin, yield, wake, shm.CrowdWakePeriod)
		}
	}
	for _, tt := range tests {
		spin, yield, wake := waitPolicy(tt.local, tt.serverCPUs, tt.cpuList)
		if wake != shm.WakePeriod {
			t.Errorf("%s: wake period %v, want %v", tt.name, wake, shm.WakePeriod)
		}
		if got := spin == spinning && yield == 0; got != tt.spins {
			t.Errorf("%s: spin %v, yield %v; want spinning %v", tt.name, spin, yield, tt.spins)
		}
		if !tt.spins && (spin != 0 || yield == 0) {
			t.Errorf("%s: spin %v, yield %v; want the oversubscribed policy", tt.name, spin, yield)
		}
	}
}

package runtime

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// TestSelectorModel: the model a tool such as hcclrun plan prices with is
// the one a job would: HCCL_SHM_DISABLE prices the ranks of a server as
// the network class, HCCL_SHM_DIRECT sets which collectives post in place.
func TestSelectorModel(t *testing.T) {
	predict := func(env map[string]string) (selector.Model, selector.Estimate) {
		t.Helper()
		m, p, err := SelectorModel(func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		call := selector.Call{Coll: plan.AllGather, Bytes: 1 << 20, Topo: selector.Topo{Ranks: 2, Servers: 1}}
		table := selector.Predict(m, p, call)
		e, err := table.Chosen()
		if err != nil {
			t.Fatal(err)
		}
		return m, e
	}
	def, shm := predict(map[string]string{})
	if def.Posted&selector.PostedBit(plan.AllGather) == 0 {
		t.Error("by default AllGather is not priced as posted")
	}
	copied, ring := predict(map[string]string{"HCCL_SHM_DIRECT": "0"})
	if copied.Posted != 0 {
		t.Errorf("HCCL_SHM_DIRECT=0: posted set %#x, want none", copied.Posted)
	}
	_, tcp := predict(map[string]string{"HCCL_SHM_DISABLE": "1"})
	if !(shm.Time < ring.Time && ring.Time < tcp.Time) {
		t.Errorf("AllGather 1 MiB at np 2: posted %v, through the rings %v, over TCP %v; want them in that order, rising", shm.Time, ring.Time, tcp.Time)
	}
	if _, _, err := SelectorModel(func(k string) string { return map[string]string{"HCCL_ALGO": "bogus"}[k] }); err == nil {
		t.Error("HCCL_ALGO=bogus accepted")
	}
}

// TestSelectorModelCores: a job prices with its server's cores (the rank
// table's, when the launcher bound each rank to one CPU), a tuning file's
// "cores" over them, and tools with their own process's.
func TestSelectorModelCores(t *testing.T) {
	if got := hostCPUs(6, "0-1"); got != 6 {
		t.Errorf("hostCPUs with the table's 6 CPUs and an affinity of 2: %d, want 6", got)
	}
	if got := hostCPUs(0, "0-2,5"); got != 4 {
		t.Errorf("hostCPUs of an unbound rank with CPUs 0-2,5: %d, want 4", got)
	}
	m, _, err := selectorModel(Knobs{}, 6)
	if err != nil || m.Cores != 6 {
		t.Fatalf("selectorModel for 6 cores: cores %d, err %v", m.Cores, err)
	}
	path := filepath.Join(t.TempDir(), "tuning")
	if err := os.WriteFile(path, []byte("cores 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, _, err := selectorModel(Knobs{TuningFile: path}, 6); err != nil || m.Cores != 3 {
		t.Errorf("a tuning file's cores 3 over 6: cores %d, err %v", m.Cores, err)
	}
	if m, _, err := SelectorModel(func(string) string { return "" }); err != nil || m.Cores != goruntime.NumCPU() {
		t.Errorf("SelectorModel: cores %d, err %v; want this process's %d", m.Cores, err, goruntime.NumCPU())
	}
}

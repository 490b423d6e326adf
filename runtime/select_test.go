package runtime

import (
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

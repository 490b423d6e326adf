package runtime

import (
	"fmt"
	"time"

	"github.com/hcclrun/hcclrun/ranktable"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// tableFacts is what the rank table tells a rank beyond its identity.
// Every rank reads the same table, so all agree on it.
type tableFacts struct {
	// layout is the table's servers, of contiguous ranks in table
	// order (layout.go); nil for one server. fromTable says a table was
	// read: without one the ranks agree on a layout from their facts.
	layout    *plan.Layout
	fromTable bool
	// serverCPUs is how many CPUs the ranks of this rank's server are
	// bound to together (the union of their cpu_lists), 0 when the table
	// does not bind every one of them: whether each has a core to spin on
	// (shmlink.Host.Wait) is a question about the server, which a rank bound to
	// one CPU cannot answer from its own affinity.
	serverCPUs int
	// handoff is how long the launcher measured a shared core to take to
	// change hands on its host (the table's handoff_ns), 0 when it did
	// not: the selector prices oversubscribed rounds from it.
	handoff time.Duration
}

func readTableFacts(tableFile string, size, rank int) (tableFacts, error) {
	if tableFile == "" {
		return tableFacts{}, nil
	}
	t, err := ranktable.ReadFile(tableFile)
	if err != nil {
		return tableFacts{}, fmt.Errorf("HCCL_RANK_TABLE_FILE: %w", err)
	}
	if t.Size() != size {
		return tableFacts{}, fmt.Errorf("HCCL_RANK_TABLE_FILE %s lists %d ranks, HCCL_WORLD_SIZE is %d", tableFile, t.Size(), size)
	}
	f := tableFacts{handoff: t.Handoff(), fromTable: true}
	servers := t.Servers()
	sizes := make([]int, len(servers))
	for i := range servers {
		sizes[i] = servers[i].Size()
	}
	f.layout = plan.SizesLayout(sizes...)
	if loc, err := t.Locate(rank); err == nil {
		f.serverCPUs = boundCPUs(servers[loc.Node].Devices)
	}
	return f, nil
}

// boundCPUs is how many distinct CPUs devices are bound to, 0 when one of
// them is not bound (or its cpu_list does not parse: the table's
// validation has its say elsewhere).
func boundCPUs(devices []ranktable.Device) int {
	seen := map[int]bool{}
	for i := range devices {
		cpus, err := devices[i].CPUs()
		if err != nil || len(cpus) == 0 {
			return 0
		}
		for _, c := range cpus {
			seen[c] = true
		}
	}
	return len(seen)
}

package placement

import (
	"bufio"
	"fmt"
	"io"
)

// DisplayMap writes the job map in the spirit of Open MPI's --display-map:
// a header saying how the ranks were mapped, then per host its slots,
// max_slots and ranks. Under map-by node the header says that ranks are
// numbered contiguously per host, since that is where we differ from a
// plain "mpirun --map-by node". It returns the first write error.
func (p *Placement) DisplayMap(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, " ========================   JOB MAP   ========================\n")
	fmt.Fprintf(bw, " Mapping: %d ranks on %d hosts, %s\n", p.Size(), len(p.Nodes), p.policy())
	for _, n := range p.Nodes {
		maxSlots := "none"
		if n.Host.MaxSlots > 0 {
			maxSlots = fmt.Sprint(n.Host.MaxSlots)
		}
		over := ""
		if n.Oversubscribed() {
			over = " (oversubscribed)"
		}
		fmt.Fprintf(bw, "\n Data for node: %s\tNum slots: %d\tMax slots: %s\tNum procs: %d%s\n",
			n.Host.Name, n.Host.Slots, maxSlots, n.Ranks, over)
		for l := range n.Ranks {
			fmt.Fprintf(bw, " \tProcess rank: %d\tLocal rank: %d\n", n.FirstRank+l, l)
		}
	}
	fmt.Fprintf(bw, "\n =============================================================\n")
	return bw.Flush()
}

func (p *Placement) policy() string {
	if p.PerNode > 0 {
		return fmt.Sprintf("-N %d (%d ranks per host, numbered host by host)", p.PerNode, p.PerNode)
	}
	if p.MapBy == MapByNode {
		return "map-by node: rank counts dealt round robin, ranks numbered contiguously per host " +
			"(as --rank-by slot; the rank table needs each host's ranks contiguous)"
	}
	return "map-by slot: each host's slots filled in turn"
}

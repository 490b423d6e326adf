package runtime

import (
	"context"
	"errors"
	"io"
	"slices"

	"github.com/hcclrun/hcclrun/runtime/topo"
)

// Topology is the job's layout as its ranks described themselves at Init:
// which ranks share a server, and so talk over shared memory.
type Topology struct {
	// Servers lists the ranks of each server, in order of their lowest
	// rank.
	Servers [][]int

	t *topo.Topology
}

// Topology gathers every rank's facts from the control plane and returns
// the job's layout. It does not communicate with the other ranks beyond
// reading what they published at Init.
func (c *Comm) Topology(ctx context.Context) (*Topology, error) {
	facts := make([]topo.Facts, c.Size())
	for r := range facts {
		f, err := c.links.PeerFacts(ctx, r)
		if err != nil {
			return nil, &OpError{Op: "Topology", Rank: c.Rank(), Peer: r, Step: -1, Err: err}
		}
		f.Rank = r // the communicator's numbering, not the job's (Split)
		facts[r] = f
	}
	t, err := topo.Build(facts, c.knobs.ShmDisable)
	if err != nil {
		return nil, &OpError{Op: "Topology", Rank: c.Rank(), Peer: -1, Step: -1, Err: err}
	}
	servers := make([][]int, len(t.Servers))
	for i, s := range t.Servers {
		servers[i] = slices.Clone(s)
	}
	return &Topology{Servers: servers, t: t}, nil
}

// Print writes the layout for people, as hcclrun topo shows it: the
// servers with their host names and ranks, a rank x rank matrix of how
// each pair is linked (shm within a server, tcp between servers, or tcp
// throughout with HCCL_SHM_DISABLE=1), and each rank's network interface,
// address and CPUs.
func (t *Topology) Print(w io.Writer) error {
	if t.t == nil {
		return errors.New("hccl: Topology.Print: not a topology from Comm.Topology")
	}
	return t.t.Print(w)
}

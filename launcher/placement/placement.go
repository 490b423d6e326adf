package placement

import "fmt"

// Placement is the result of Map: which host runs which ranks.
type Placement struct {
	// Nodes are the hosts that got ranks, in the order hosts were given.
	// Index i is the node rank (HCCL_NODE_RANK) and the index of the
	// server in the rank table.
	Nodes []Node
	// MapBy and PerNode are the options the placement was made with.
	MapBy   MapBy
	PerNode int
}

// Node is one host of a placement and its ranks, FirstRank ..
// FirstRank+Ranks-1; local rank i is rank FirstRank+i.
type Node struct {
	Host      Host
	FirstRank int
	Ranks     int
}

// Oversubscribed reports whether the node runs more ranks than it has slots.
func (n Node) Oversubscribed() bool { return n.Ranks > n.Host.Slots }

// Size returns the number of ranks (the world size).
func (p *Placement) Size() int {
	if len(p.Nodes) == 0 {
		return 0
	}
	last := p.Nodes[len(p.Nodes)-1]
	return last.FirstRank + last.Ranks
}

// Oversubscribed reports whether any node runs more ranks than slots.
func (p *Placement) Oversubscribed() bool {
	for _, n := range p.Nodes {
		if n.Oversubscribed() {
			return true
		}
	}
	return false
}

// Locate returns the node index and local rank of rank.
func (p *Placement) Locate(rank int) (node, local int, err error) {
	for i, n := range p.Nodes {
		if rank >= n.FirstRank && rank < n.FirstRank+n.Ranks {
			return i, rank - n.FirstRank, nil
		}
	}
	return 0, 0, fmt.Errorf("placement: rank %d out of range (job has %d ranks)", rank, p.Size())
}

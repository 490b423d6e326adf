package runtime

import (
	"slices"
)

// LinkInfo describes one open data link of a rank.
type LinkInfo struct {
	Peer      int
	Transport string // "shm" or "tcp"
	// RingBytes is the capacity of each of a shared-memory link's two
	// rings (HCCL_BUFFSIZE, shrunk on crowded hosts), 0 for TCP.
	RingBytes int
}

// Links returns the data links this rank has open, by peer. Links open on
// first use, so the list says which peers the collectives called so far
// talked to (hcclrun topo prints them for the whole job).
func (c *Comm) Links() []LinkInfo {
	m := c.links
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]LinkInfo, 0, len(m.links))
	for peer, l := range m.links {
		info := LinkInfo{Peer: peer, Transport: m.open[peer].Load().via}
		if r, ok := l.(interface{ RingBytes() int }); ok {
			info.RingBytes = r.RingBytes()
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b LinkInfo) int { return a.Peer - b.Peer })
	return out
}

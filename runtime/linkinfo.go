package runtime

import (
	"slices"
)

// LinkInfo describes one open data link of a rank.
type LinkInfo struct {
	Peer      int
	Channel   int    // 0, or the channel beyond the first it carries
	Transport string // "shm" or "tcp"
	// RingBytes is the capacity of each of a shared-memory link's two
	// rings (HCCL_BUFFSIZE, shrunk on crowded hosts), 0 for TCP.
	RingBytes int
}

// Links returns the data links this rank has open, by peer and channel.
// Links open on first use, so the list says which peers the collectives
// called so far talked to, and over how many channels (hcclrun topo
// prints them for the whole job).
func (c *Comm) Links() []LinkInfo {
	var out []LinkInfo
	c.linkSets(func(ch int, s *linkSet) { out = s.info(ch, out) })
	slices.SortFunc(out, func(a, b LinkInfo) int {
		if a.Peer != b.Peer {
			return a.Peer - b.Peer
		}
		return a.Channel - b.Channel
	})
	return out
}

// info appends the set's open links, which carry channel ch, to out.
func (s *linkSet) info(ch int, out []LinkInfo) []LinkInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	for peer, l := range s.links {
		info := LinkInfo{Peer: peer, Channel: ch, Transport: s.open[peer].Load().via}
		if r, ok := l.(interface{ RingBytes() int }); ok {
			info.RingBytes = r.RingBytes()
		}
		out = append(out, info)
	}
	return out
}

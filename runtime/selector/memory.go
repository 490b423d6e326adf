package selector

import "math"

// memory is how many times slower byte work runs for a call of size bytes
// on topology t than from cache: 1 up to a working set of CacheBytes,
// MemSlowdown from MemBytes on, and the same factor per doubling in
// between (Model.MemSlowdown). The working set is the busiest server's
// ranks times the call's bytes: each rank touches its send and receive
// buffers and its links' staging, all of them of the call's order.
func (m Model) memory(t Topo, size float64) float64 {
	if m.MemSlowdown <= 1 || m.CacheBytes <= 0 || m.MemBytes <= m.CacheBytes {
		return 1
	}
	ws := float64(t.perServer()) * size
	lo, hi := float64(m.CacheBytes), float64(m.MemBytes)
	switch {
	case ws <= lo:
		return 1
	case ws >= hi:
		return m.MemSlowdown
	}
	return math.Pow(m.MemSlowdown, math.Log2(ws/lo)/math.Log2(hi/lo))
}

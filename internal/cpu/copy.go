package cpu

// Copy copies with REP MOVSB where it wins: on CPUs with enhanced REP MOVSB
// (ERMS), from repMovsbMin to streamMin. Below that Go's copy is as fast;
// above it Go's copy stores around the cache (non-temporal stores), where
// REP MOVSB would read every destination line in and evict ring lines the
// peer still needs. Why and by how much: docs/measurements.md#copies.

// Copy copies min(len(dst), len(src)) bytes from src into dst and returns
// the count, as copy does. Overlapping ranges are copied as copy copies
// them (REP MOVSB only copies forwards).
func Copy(dst, src []byte) int {
	n := min(len(dst), len(src))
	if n >= repMovsbMin && hasRepMovsb && n < streamMin() && !overlap(dst[:n], src[:n]) {
		repMovsb(&dst[0], &src[0], uintptr(n))
		return n
	}
	return copy(dst, src)
}

// repMovsbMin is the shortest copy that Copy does with REP MOVSB.
const repMovsbMin = 4 << 10

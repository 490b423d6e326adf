// Package memcopy copies bytes the fastest way this CPU knows for the
// sizes collectives move: the shm rings' copies in and out of shared
// memory, and the executor's local copies (a rank's own block of an
// AllGather or AlltoAll, the input of an out-of-place AllReduce).
//
// On x86 CPUs with enhanced REP MOVSB (ERMS) a copy of 4 KiB or more is one
// REP MOVSB. Why it wins by this much is our reading, not measured: the
// microcode can write whole lines without reading them first, while Go's
// copy moves vector registers (and from some size on stores around the
// cache), and every line it stores into ring memory that the peer's core
// has just read must first be fetched back from it.
//
// Measured, in the rings (the PVM machine of 2026-12-02, np 2, interleaved
// runs of the two builds, medians out of place; six runs each, then four
// at the commit): AllReduce 1 MiB 185 -> 148 us and 167 -> 137 (in place
// 259 -> 175, 233 -> 141), AllGather 16 MiB 1511 -> 1009 us, Broadcast
// 16 MiB 1486 -> 684 and 997 -> 878 us; AllReduce 64 KiB 4.27 against
// 4.38 us, unchanged. In the executor's local copies (the KVM machine of
// 2026-12-02, np 2, interleaved runs, medians): AllGather 4 MiB 182 ->
// 111 us, AlltoAll 4 MiB 177 -> 118, AllGather 16 MiB 719 -> 645. In a
// loop over cache-resident buffers on the latter: 1 MiB 43 against 67
// GB/s, 16 MiB 38 against 49. Below 4 KiB Go's copy is as fast or faster
// (64 bytes: 1.8 against 3.6 ns in cache), and without ERMS (or with
// -tags noasm) Copy is Go's copy throughout.
//
// From streamMin on Copy is Go's copy again, for the opposite reason: a
// copy that large does not fit the cache beside the collective's other
// buffers, and Go's copy stores it around the cache (non-temporal stores
// from 1 MiB on, runtime/memmove_amd64.s), where REP MOVSB reads every
// destination line in first and evicts lines the rings still need. How
// large that is depends on the last-level cache (stream.go).
package memcopy

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

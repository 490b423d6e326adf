package bench

import (
	"fmt"
	"strings"
)

// Coll is one of the collectives the benchmark runs.
type Coll int

// The collectives, in the order -o all runs them.
const (
	AllReduce Coll = iota
	AllGather
	ReduceScatter
	AlltoAll
	AlltoAllV
	Broadcast
	Reduce
	numColls
)

var collNames = [numColls]string{
	AllReduce:     "allreduce",
	AllGather:     "allgather",
	ReduceScatter: "reducescatter",
	AlltoAll:      "alltoall",
	AlltoAllV:     "alltoallv",
	Broadcast:     "broadcast",
	Reduce:        "reduce",
}

func (c Coll) String() string {
	if c >= 0 && c < numColls {
		return collNames[c]
	}
	return fmt.Sprintf("Coll(%d)", int(c))
}

// ParseColls reads the -o value: one collective, a comma-separated list, or
// "all" for every collective in order. Names are case-insensitive and
// duplicates are dropped.
func ParseColls(s string) ([]Coll, error) {
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		all := make([]Coll, numColls)
		for c := range numColls {
			all[c] = c
		}
		return all, nil
	}
	var out []Coll
	seen := map[Coll]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		c, ok := collByName(name)
		if !ok {
			return nil, fmt.Errorf("unknown collective %q (want %s or all)", name, strings.Join(collNames[:], ", "))
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

func collByName(name string) (Coll, bool) {
	for c, n := range collNames {
		if n == name {
			return Coll(c), true
		}
	}
	return 0, false
}

// Reduces reports whether the collective takes a reduction operator (the
// redop column shows "none" otherwise).
func (c Coll) Reduces() bool { return c == AllReduce || c == ReduceScatter || c == Reduce }

// Rooted reports whether the collective has a root (the root column shows
// -1 otherwise).
func (c Coll) Rooted() bool { return c == Broadcast || c == Reduce }

// HasInPlace reports whether the collective has an in-place form. The
// runtime rejects in-place AlltoAll and AlltoAllV, as HCCL does; the MPI
// benchmark skips them too so that the columns mean the same.
func (c Coll) HasInPlace() bool { return c != AlltoAll && c != AlltoAllV }

// BusFactor is nccl-tests' ratio of bus bandwidth to algorithm bandwidth on
// n ranks: the fraction of the data each rank must send or receive over its
// link for the collective to finish, relative to the size column. It makes
// busbw comparable across rank counts and with the link's peak speed.
//
//	allreduce                          2(n-1)/n  (a reduce-scatter then an all-gather)
//	allgather, reducescatter,
//	alltoall, alltoallv                (n-1)/n   (every block but one's own crosses a link)
//	broadcast, reduce                  1         (the whole buffer crosses the root's link)
func (c Coll) BusFactor(n int) float64 {
	if n < 1 {
		return 0
	}
	switch c {
	case AllReduce:
		return 2 * float64(n-1) / float64(n)
	case AllGather, ReduceScatter, AlltoAll, AlltoAllV:
		return float64(n-1) / float64(n)
	default:
		return 1
	}
}

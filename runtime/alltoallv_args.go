package runtime

import (
	"slices"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// checkV validates AlltoAllV's counts and displacements on this rank: one
// per rank, none negative, every range inside its buffer, and no two
// receive ranges overlapping (their order would decide the result). That
// ranks agree with each other is checked on the wire: every frame carries
// its length, and a receiver expecting another count fails with
// ErrMismatch naming both ranks.
func (c *Comm) checkV(sendLen int, sendCounts, sdispls []int, recvLen int, recvCounts, rdispls []int) error {
	n := c.Size()
	for _, v := range []struct {
		name string
		s    []int
	}{{"sendCounts", sendCounts}, {"sdispls", sdispls}, {"recvCounts", recvCounts}, {"rdispls", rdispls}} {
		if len(v.s) != n {
			return c.invalid(plan.AlltoAllV, "len(%s) = %d, want Size() = %d", v.name, len(v.s), n)
		}
		for i, x := range v.s {
			if x < 0 {
				return c.invalid(plan.AlltoAllV, "%s[%d] = %d is negative", v.name, i, x)
			}
		}
	}
	for j := 0; j < n; j++ {
		if end := sdispls[j] + sendCounts[j]; end > sendLen {
			return c.invalid(plan.AlltoAllV, "send range for rank %d is [%d:%d], beyond len(send) = %d", j, sdispls[j], end, sendLen)
		}
		if end := rdispls[j] + recvCounts[j]; end > recvLen {
			return c.invalid(plan.AlltoAllV, "receive range for rank %d is [%d:%d], beyond len(recv) = %d", j, rdispls[j], end, recvLen)
		}
	}
	order := make([]int, 0, n)
	for j := 0; j < n; j++ {
		if recvCounts[j] > 0 {
			order = append(order, j)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return rdispls[a] - rdispls[b] })
	for k := 1; k < len(order); k++ {
		a, b := order[k-1], order[k]
		if rdispls[a]+recvCounts[a] > rdispls[b] {
			return c.invalid(plan.AlltoAllV, "receive ranges of ranks %d [%d:%d] and %d [%d:%d] overlap",
				a, rdispls[a], rdispls[a]+recvCounts[a], b, rdispls[b], rdispls[b]+recvCounts[b])
		}
	}
	return nil
}

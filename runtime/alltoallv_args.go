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
	if err := c.checkVSlice("sendCounts", sendCounts, n); err != nil {
		return err
	}
	if err := c.checkVSlice("sdispls", sdispls, n); err != nil {
		return err
	}
	if err := c.checkVSlice("recvCounts", recvCounts, n); err != nil {
		return err
	}
	if err := c.checkVSlice("rdispls", rdispls, n); err != nil {
		return err
	}
	for j := 0; j < n; j++ {
		if end := sdispls[j] + sendCounts[j]; end > sendLen {
			return c.invalid(plan.AlltoAllV, "send range for rank %d is [%d:%d], beyond len(send) = %d", j, sdispls[j], end, sendLen)
		}
		if end := rdispls[j] + recvCounts[j]; end > recvLen {
			return c.invalid(plan.AlltoAllV, "receive range for rank %d is [%d:%d], beyond len(recv) = %d", j, rdispls[j], end, recvLen)
		}
	}
	// The non-empty receive ranges in the order of their displacements;
	// each must end before the next begins. An insertion sort over a
	// buffer on the stack for the rank counts of one server or a few (the
	// general sort and its closure were a tenth of an 8-byte AlltoAllV at
	// np 2), the library's sort beyond.
	var small [64]int
	order := small[:0]
	if n > len(small) {
		order = make([]int, 0, n)
	}
	for j := 0; j < n; j++ {
		if recvCounts[j] > 0 {
			order = append(order, j)
		}
	}
	if len(order) <= len(small) {
		for k := 1; k < len(order); k++ {
			for i := k; i > 0 && rdispls[order[i-1]] > rdispls[order[i]]; i-- {
				order[i-1], order[i] = order[i], order[i-1]
			}
		}
	} else {
		slices.SortStableFunc(order, func(a, b int) int { return rdispls[a] - rdispls[b] })
	}
	for k := 1; k < len(order); k++ {
		a, b := order[k-1], order[k]
		if rdispls[a]+recvCounts[a] > rdispls[b] {
			return c.invalid(plan.AlltoAllV, "receive ranges of ranks %d [%d:%d] and %d [%d:%d] overlap",
				a, rdispls[a], rdispls[a]+recvCounts[a], b, rdispls[b], rdispls[b]+recvCounts[b])
		}
	}
	return nil
}

// checkVSlice checks that s, AlltoAllV's argument name, has one entry per
// rank and none negative.
func (c *Comm) checkVSlice(name string, s []int, n int) error {
	if len(s) != n {
		return c.invalid(plan.AlltoAllV, "len(%s) = %d, want Size() = %d", name, len(s), n)
	}
	for i, x := range s {
		if x < 0 {
			return c.invalid(plan.AlltoAllV, "%s[%d] = %d is negative", name, i, x)
		}
	}
	return nil
}

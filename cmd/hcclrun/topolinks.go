package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// Link marks of the table printLinks writes, one byte per pair.
const (
	linkNone = 0
	linkShm  = 1
	linkTCP  = 2
)

// maxLinkMatrix is the largest job whose rank x rank matrix of open links
// topo prints; a larger one gets the summary only.
const maxLinkMatrix = 128

// openLinks makes every rank call what a job calls first (a Barrier, an
// AllReduce of 8 bytes and of 1 MiB, the selector choosing as for any job),
// then gathers on rank 0 which links those calls opened, taken before the
// gathering (whose own links are not counted), and has rank 0 print them.
func openLinks(ctx context.Context, comm *hccl.Comm, w io.Writer) error {
	if err := comm.Barrier(ctx); err != nil {
		return err
	}
	for _, n := range []int{2, 1 << 18} {
		buf := make([]float32, n)
		if err := hccl.AllReduce(ctx, comm, buf, buf, hccl.Sum); err != nil {
			return err
		}
	}
	size := comm.Size()
	mine := make([]uint8, size)
	ring := 0
	for _, l := range comm.Links() {
		mine[l.Peer] = linkTCP
		if l.Transport == "shm" {
			mine[l.Peer], ring = linkShm, max(ring, l.RingBytes)
		}
	}
	rings := []int32{int32(ring)}
	all := make([]uint8, size*size)
	allRings := make([]int32, size)
	if err := hccl.AllGather(ctx, comm, mine, all); err != nil {
		return err
	}
	if err := hccl.AllGather(ctx, comm, rings, allRings); err != nil {
		return err
	}
	if comm.Rank() == 0 {
		_, err := io.WriteString(w, formatLinks(size, all, allRings))
		return err
	}
	return nil
}

// formatLinks prints the links of a job of size ranks: marks[a*size+b] is
// rank a's link to rank b, rings[a] rank a's largest shm ring.
func formatLinks(size int, marks []uint8, rings []int32) string {
	var b strings.Builder
	per := make([]int, size)
	shm, tcp, segBytes := 0, 0, int64(0)
	for a := range size {
		for c := range size {
			switch marks[a*size+c] {
			case linkShm:
				per[a]++
				if a < c {
					shm++
					segBytes += 2 * int64(max(rings[a], rings[c]))
				}
			case linkTCP:
				per[a]++
				if a < c {
					tcp++
				}
			}
		}
	}
	sorted := slices.Clone(per)
	slices.Sort(sorted)
	fmt.Fprintf(&b, "\nLinks opened by a Barrier and AllReduces of 8 B and 1 MiB (links open on first use):\n")
	fmt.Fprintf(&b, "  %d links: %d shm, %d tcp; per rank min %d, median %d, max %d of %d peers\n",
		shm+tcp, shm, tcp, sorted[0], sorted[size/2], sorted[size-1], size-1)
	if shm > 0 {
		fmt.Fprintf(&b, "  shared-memory rings: %s each, %s of /dev/shm in all (%s per rank)\n",
			approxBytes(int64(slices.Max(rings))), approxBytes(segBytes), approxBytes(segBytes/int64(size)))
	}
	if size > maxLinkMatrix {
		fmt.Fprintf(&b, "  (the matrix is printed for up to %d ranks)\n", maxLinkMatrix)
		return b.String()
	}
	b.WriteString("\n")
	width := len(fmt.Sprint(size - 1))
	for a := range size {
		fmt.Fprintf(&b, "r%-*d ", width, a)
		for c := range size {
			switch {
			case a == c:
				b.WriteByte('X')
			case marks[a*size+c] == linkShm:
				b.WriteByte('S')
			case marks[a*size+c] == linkTCP:
				b.WriteByte('T')
			default:
				b.WriteByte('.')
			}
		}
		fmt.Fprintf(&b, " %d\n", per[a])
	}
	b.WriteString("\nLegend: row a, column b: S = shm link, T = TCP link, . = none, X = self; the last column counts the row's links\n")
	return b.String()
}

// approxBytes prints n in whole B, KiB, MiB or GiB, rounded down.
func approxBytes(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

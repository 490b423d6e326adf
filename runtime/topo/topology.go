package topo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hcclrun/hcclrun/ranktable"
)

// Class is how two ranks reach each other.
type Class uint8

const (
	Self Class = iota // the same rank
	Shm               // shared memory: same server
	TCP               // TCP through a NIC
)

func (c Class) String() string {
	switch c {
	case Self:
		return "X"
	case Shm:
		return "shm"
	case TCP:
		return "tcp"
	}
	return fmt.Sprintf("Class(%d)", c)
}

// Topology is the job's layout, the same on every rank that built it from
// the same facts.
type Topology struct {
	Facts   []Facts // by rank
	Servers [][]int // ranks of each server, in order of their lowest rank
	server  []int   // server index of each rank
	noShm   bool
}

// Build groups ranks into servers by host identity. With shmDisabled every
// pair of distinct ranks is TCP, as HCCL_SHM_DISABLE=1 asks.
func Build(facts []Facts, shmDisabled bool) (*Topology, error) {
	t := &Topology{Facts: facts, server: make([]int, len(facts)), noShm: shmDisabled}
	index := map[HostID]int{}
	for r, f := range facts {
		if f.Rank != r {
			return nil, fmt.Errorf("topo: facts of rank %d stored at %d", f.Rank, r)
		}
		s, ok := index[f.Host]
		if !ok {
			s = len(t.Servers)
			index[f.Host] = s
			t.Servers = append(t.Servers, nil)
		}
		t.server[r] = s
		t.Servers[s] = append(t.Servers[s], r)
	}
	return t, nil
}

// Size is the number of ranks.
func (t *Topology) Size() int { return len(t.Facts) }

// LocalRank returns rank's position among the ranks of its server.
func (t *Topology) LocalRank(rank int) int {
	for i, r := range t.Servers[t.server[rank]] {
		if r == rank {
			return i
		}
	}
	return -1
}

// Class returns how ranks a and b reach each other.
func (t *Topology) Class(a, b int) Class {
	switch {
	case a == b:
		return Self
	case t.server[a] == t.server[b] && !t.noShm:
		return Shm
	}
	return TCP
}

// SameHost tells whether two facts describe one shared-memory domain.
func SameHost(a, b Facts) bool { return a.Host == b.Host }

// NICOf returns the interface holding rank's data address, or "" when
// unknown.
func (t *Topology) NICOf(rank int) string {
	f := t.Facts[rank]
	for _, n := range f.NICs {
		if n.Has(f.DataIP) {
			return n.Name
		}
	}
	return ""
}

// Print writes the layout for people, in the style of `nvidia-smi topo -m`:
// the servers with their ranks, a rank x rank matrix of link classes, and
// each rank's NIC and CPUs.
func (t *Topology) Print(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d ranks on %d %s\n", t.Size(), len(t.Servers), plural(len(t.Servers), "server"))
	for s, ranks := range t.Servers {
		f := t.Facts[ranks[0]]
		fmt.Fprintf(&b, "server %d: %s ranks %s (%s)\n", s, f.Hostname, rankList(ranks), f.Host)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', 0)
	fmt.Fprint(tw, "\t")
	for r := range t.Size() {
		fmt.Fprintf(tw, "r%d\t", r)
	}
	fmt.Fprint(tw, "NIC\tIP\tCPUs\n")
	for a := range t.Size() {
		fmt.Fprintf(tw, "r%d\t", a)
		for c := range t.Size() {
			fmt.Fprintf(tw, "%s\t", t.Class(a, c))
		}
		nic := t.NICOf(a)
		if nic == "" {
			nic = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", nic, t.Facts[a].DataIP, t.Facts[a].CPUs)
	}
	tw.Flush()
	b.WriteString("\nLegend: X = self, shm = shared memory (same server), tcp = TCP over the NIC shown\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// rankList writes ranks as ranges, "0-3,8", the way CPU lists are written.
func rankList(ranks []int) string {
	return ranktable.FormatCPUList(ranks)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

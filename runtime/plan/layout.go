package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Layout says which server each rank of a communicator is on. The
// hierarchical algorithms build on it, the algorithms that reach every peer
// over shared memory refuse a layout of several servers, and the selector
// prices by it. Servers may hold different numbers of ranks, and a server's
// ranks need not be contiguous; servers are numbered in the order of their
// lowest rank, a server's ranks listed in increasing order.
//
// A Layout is immutable and safe for concurrent use. A nil *Layout is one
// server holding every rank.
type Layout struct {
	server     []int   // by rank
	local      []int   // by rank: its index among its server's ranks
	members    [][]int // by server
	largest    int
	contiguous bool
}

// NewLayout returns the layout in which rank r is on the server labelled
// labels[r]. Labels are any non-negative numbers, equal for ranks of one
// server; the layout renumbers the servers by their lowest rank. A single
// server is the nil layout.
func NewLayout(labels []int) (*Layout, error) {
	if len(labels) == 0 {
		return nil, fmt.Errorf("plan: layout of no ranks")
	}
	l := &Layout{server: make([]int, len(labels)), local: make([]int, len(labels)), contiguous: true}
	index := map[int]int{}
	for r, lab := range labels {
		if lab < 0 {
			return nil, fmt.Errorf("plan: layout: rank %d on server %d", r, lab)
		}
		g, ok := index[lab]
		if !ok {
			g = len(l.members)
			index[lab] = g
			l.members = append(l.members, nil)
		} else if g != l.server[r-1] {
			l.contiguous = false
		}
		l.server[r] = g
		l.local[r] = len(l.members[g])
		l.members[g] = append(l.members[g], r)
		l.largest = max(l.largest, len(l.members[g]))
	}
	if len(l.members) == 1 {
		return nil, nil
	}
	return l, nil
}

// EvenLayout is n ranks on servers of k contiguous ranks each (the last
// one holds the rest when k does not divide n); k of 0 or n and more is one
// server (nil).
func EvenLayout(n, k int) *Layout {
	if k <= 0 || k >= n {
		return nil
	}
	labels := make([]int, n)
	for r := range labels {
		labels[r] = r / k
	}
	l, _ := NewLayout(labels)
	return l
}

// SizesLayout is servers of the given sizes, each of contiguous ranks, in
// order; nil when there is one.
func SizesLayout(sizes ...int) *Layout {
	if len(sizes) < 2 {
		return nil
	}
	var labels []int
	for g, k := range sizes {
		for range k {
			labels = append(labels, g)
		}
	}
	l, err := NewLayout(labels)
	if err != nil {
		return nil
	}
	return l
}

// Sub is the layout of a communicator whose rank i is rank members[i] of
// l's: each keeps its server. It may be uneven or not contiguous where l
// is neither; one server is nil.
func (l *Layout) Sub(members []int) *Layout {
	if l == nil || len(members) == 0 {
		return nil
	}
	labels := make([]int, len(members))
	for i, r := range members {
		labels[i] = l.server[r]
	}
	sub, _ := NewLayout(labels) // labels are l's servers: never negative
	return sub
}

// Ranks is the number of ranks the layout places, 0 for nil (which places
// any number).
func (l *Layout) Ranks() int {
	if l == nil {
		return 0
	}
	return len(l.server)
}

// Servers is the number of servers, 1 for nil.
func (l *Layout) Servers() int {
	if l == nil {
		return 1
	}
	return len(l.members)
}

// Server is the index of rank r's server.
func (l *Layout) Server(r int) int {
	if l == nil {
		return 0
	}
	return l.server[r]
}

// Local is rank r's index among the ranks of its server.
func (l *Layout) Local(r int) int {
	if l == nil {
		return r
	}
	return l.local[r]
}

// Members lists the ranks of server g in increasing order. The slice is
// the layout's own: callers must not modify it. It needs a non-nil layout.
func (l *Layout) Members(g int) []int { return l.members[g] }

// Largest is the number of ranks on the largest server, 0 for nil.
func (l *Layout) Largest() int {
	if l == nil {
		return 0
	}
	return l.largest
}

// Even tells whether every server holds the same number of ranks (true
// for nil).
func (l *Layout) Even() bool {
	return l == nil || l.largest*len(l.members) == len(l.server)
}

// Contiguous tells whether every server's ranks are consecutive (true for
// nil).
func (l *Layout) Contiguous() bool { return l == nil || l.contiguous }

// String describes the layout by its servers' sizes, "3+2+1", followed
// by their ranks when they are not contiguous: "2+1 [0 2] [1]". nil is
// "1 server".
func (l *Layout) String() string {
	if l == nil {
		return "1 server"
	}
	var b strings.Builder
	for g, m := range l.members {
		if g > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(len(m)))
	}
	if !l.contiguous {
		for _, m := range l.members {
			b.WriteString(" [")
			for i, r := range m {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(strconv.Itoa(r))
			}
			b.WriteByte(']')
		}
	}
	return b.String()
}

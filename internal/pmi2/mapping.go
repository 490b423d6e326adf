package pmi2

import (
	"fmt"
	"strconv"
	"strings"
)

// ProcessMapping expands the job attribute PMI_process_mapping, MPICH's
// "(vector,(N,C,K),...)": each block puts K consecutive ranks on each of
// the C nodes from node N on, and the blocks repeat until every rank is
// placed (srun's cyclic distribution is "(vector,(0,3,1))" for 6 ranks on
// 3 nodes: ranks 0,3 on node 0). It returns the node of each of size
// ranks.
func ProcessMapping(s string, size int) ([]int, error) {
	bad := func(why string) error { return fmt.Errorf("pmi2: PMI_process_mapping %q: %s", s, why) }
	t := strings.ReplaceAll(s, " ", "")
	inner, ok := strings.CutPrefix(t, "(vector,")
	if !ok || !strings.HasSuffix(inner, ")") {
		return nil, bad("want (vector,(node,count,ranks),...)")
	}
	inner = strings.TrimSuffix(inner, ")")
	type block struct{ node, count, ranks int }
	var blocks []block
	for inner != "" {
		if inner[0] != '(' {
			return nil, bad("want a (node,count,ranks) block")
		}
		end := strings.IndexByte(inner, ')')
		if end < 0 {
			return nil, bad("unterminated block")
		}
		f := strings.Split(inner[1:end], ",")
		if len(f) != 3 {
			return nil, bad("a block has three numbers")
		}
		var v [3]int
		for i, x := range f {
			n, err := strconv.Atoi(x)
			if err != nil || n < 0 || n > 1<<20 {
				return nil, bad(fmt.Sprintf("%q is not a count", x))
			}
			v[i] = n
		}
		if v[1] == 0 || v[2] == 0 {
			return nil, bad("a block with no nodes or no ranks")
		}
		blocks = append(blocks, block{v[0], v[1], v[2]})
		inner = strings.TrimPrefix(inner[end+1:], ",")
	}
	if len(blocks) == 0 {
		return nil, bad("no blocks")
	}
	nodes := make([]int, 0, size)
	for len(nodes) < size {
		for _, b := range blocks {
			for n := b.node; n < b.node+b.count; n++ {
				for range b.ranks {
					if len(nodes) < size {
						nodes = append(nodes, n)
					}
				}
			}
		}
	}
	return nodes, nil
}

// Local is a rank's place on its node given the node of every rank: its
// index among the ranks of its node, and how many those are.
func Local(nodes []int, rank int) (localRank, localSize int) {
	for r, n := range nodes {
		if n != nodes[rank] {
			continue
		}
		if r < rank {
			localRank++
		}
		localSize++
	}
	return localRank, localSize
}

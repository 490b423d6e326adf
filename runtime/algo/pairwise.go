package algo

// Pairwise: AlltoAll and AlltoAllV the way HCCL runs them. The rank copies
// its own block locally and exchanges one block with every peer; peers are
// visited in left/right symmetric order
//
//	rank-1, rank+1, rank-2, rank+2, ...      (mod n, each peer once)
//
// and up to MaxPeersInFlight of them share a step. Rank r meets peer r-i at
// position 2(i-1) of its order and the peer meets r, which is its rank+i,
// at position 2(i-1)+1: the same step, since steps hold an even number of
// positions. So each step is a set of simultaneous exchanges between
// matched pairs, every rank sends and receives the same number of blocks
// per step, and no rank becomes a hotspot the way "everyone sends to rank
// 0 first" would make it. 4 ranks (all in one step, as 3 <= 16):
//
//	rank 0: peers 3, 1, 2      rank 1: peers 0, 2, 3
//	rank 2: peers 1, 3, 0      rank 3: peers 2, 0, 1
//
// Counts and displacements are in elements. AlltoAllV keeps empty transfers
// so that a count mismatch reaches the receiver as a length error. Data
// larger than the executor's staging buffers is the executor's business:
// it splits each op, the plan does not change.

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// MaxPeersInFlight bounds the peers a Pairwise step exchanges with, as HCCL
// bounds the links an AlltoAllV round keeps busy.
const MaxPeersInFlight = 16

// Pairwise builds HCCL-style pairwise AlltoAll and AlltoAllV plans.
type Pairwise struct{}

// Name implements plan.Algorithm.
func (Pairwise) Name() string { return "pairwise" }

// Colls implements Collectives.
func (Pairwise) Colls() []plan.Coll { return []plan.Coll{plan.AlltoAll, plan.AlltoAllV} }

// Build implements plan.Algorithm.
func (a Pairwise) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	if req.Coll != plan.AlltoAll && req.Coll != plan.AlltoAllV {
		return nil, fmt.Errorf("rank %d: pairwise: %s: %w", req.Rank, req.Coll, ErrUnsupported)
	}
	b := newBuilder(req, a.Name())
	order := symmetricPeers(req.Size, req.Rank)
	ops := []*plan.Op{selfCopy(req)}
	for k, p := range order {
		o, i := alltoallOps(req, p)
		ops = append(ops, o, i)
		if (k+1)%MaxPeersInFlight == 0 {
			b.step(ops...)
			ops = ops[:0]
		}
	}
	b.step(ops...)
	return b.plan(), nil
}

// symmetricPeers lists the other ranks as rank-1, rank+1, rank-2, rank+2, ...
func symmetricPeers(n, rank int) []int {
	peers := make([]int, 0, n-1)
	for i := 1; len(peers) < n-1; i++ {
		l, r := mod(rank-i, n), mod(rank+i, n)
		peers = append(peers, l)
		if r != l {
			peers = append(peers, r)
		}
	}
	return peers
}

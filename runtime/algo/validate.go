package algo

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// ErrUnsupported is wrapped by the errors of algorithms asked for a call they
// do not serve (a collective outside their list, an in-place AlltoAll, ...),
// so that the selector can tell "cannot" from "invalid".
var ErrUnsupported = errors.New("algorithm cannot serve the call")

// ErrInvalid is wrapped by the errors about requests no algorithm could
// serve: a rank outside the communicator, a negative count, a bad root.
var ErrInvalid = errors.New("invalid request")

// Collectives is implemented by every algorithm of this package: the
// collectives it can build plans for.
type Collectives interface {
	Colls() []plan.Coll
}

// Serves tells whether a builds plans for collective c.
func Serves(a plan.Algorithm, c plan.Coll) bool {
	cs, ok := a.(Collectives)
	return ok && slices.Contains(cs.Colls(), c)
}

// check validates what every algorithm relies on, naming the rank.
func check(a plan.Algorithm, req plan.Request) error {
	if !Serves(a, req.Coll) {
		return fmt.Errorf("rank %d: %s does not implement %s: %w", req.Rank, a.Name(), req.Coll, ErrUnsupported)
	}
	if req.Size < 1 || req.Rank < 0 || req.Rank >= req.Size {
		return fmt.Errorf("rank %d of %d: %w", req.Rank, req.Size, ErrInvalid)
	}
	if n := req.Layout.Ranks(); req.Layout != nil && n != req.Size {
		return fmt.Errorf("rank %d: a layout of %d ranks for %d: %w", req.Rank, n, req.Size, ErrInvalid)
	}
	if req.Count < 0 {
		return fmt.Errorf("rank %d: negative count %d: %w", req.Rank, req.Count, ErrInvalid)
	}
	switch req.Coll {
	case plan.Broadcast, plan.Reduce:
		if req.Root < 0 || req.Root >= req.Size {
			return fmt.Errorf("rank %d: root %d outside %d ranks: %w", req.Rank, req.Root, req.Size, ErrInvalid)
		}
	case plan.AlltoAll:
		if req.InPlace {
			return fmt.Errorf("rank %d: in-place %s: %w", req.Rank, req.Coll, ErrUnsupported)
		}
	case plan.AlltoAllV:
		if req.InPlace {
			return fmt.Errorf("rank %d: in-place %s: %w", req.Rank, req.Coll, ErrUnsupported)
		}
		for _, v := range []struct {
			name string
			s    []int
		}{{"send counts", req.SendCounts}, {"send displacements", req.SendDispls}, {"receive counts", req.RecvCounts}, {"receive displacements", req.RecvDispls}} {
			if len(v.s) != req.Size {
				return fmt.Errorf("rank %d: %d %s for %d ranks: %w", req.Rank, len(v.s), v.name, req.Size, ErrInvalid)
			}
			for p, x := range v.s {
				if x < 0 {
					return fmt.Errorf("rank %d: negative %s %d for peer %d: %w", req.Rank, v.name, x, p, ErrInvalid)
				}
			}
		}
		if req.SendCounts[req.Rank] != req.RecvCounts[req.Rank] {
			return fmt.Errorf("rank %d: sends itself %d elements but receives %d: %w", req.Rank, req.SendCounts[req.Rank], req.RecvCounts[req.Rank], ErrInvalid)
		}
		if err := disjoint(req.RecvCounts, req.RecvDispls); err != nil {
			return fmt.Errorf("rank %d: receive blocks: %w", req.Rank, err)
		}
	}
	return nil
}

// disjoint checks that the blocks [displs[p], displs[p]+counts[p]) do not
// overlap: two peers writing the same elements would race.
func disjoint(counts, displs []int) error {
	idx := make([]int, 0, len(counts))
	for p := range counts {
		if counts[p] > 0 {
			idx = append(idx, p)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return displs[a] - displs[b] })
	for k := 1; k < len(idx); k++ {
		a, b := idx[k-1], idx[k]
		if displs[a]+counts[a] > displs[b] {
			return fmt.Errorf("blocks of peers %d and %d overlap: %w", a, b, ErrInvalid)
		}
	}
	return nil
}

package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/topo"
)

// The server layout (plan.Layout) is which server each rank is on: the
// hierarchical algorithms build on it and the selector prices by it, so
// every rank must hold the same one. It comes from, in order:
//
//   - Job.RanksPerServer, servers of that many contiguous ranks (tests that
//     pretend to span servers on one host);
//   - the rank table, which every rank reads alike and the launcher writes
//     from the hosts it started the ranks on;
//   - without a table, the host identities the ranks published with their
//     facts (topo.Facts.Host): rank 0 reads them all, groups the ranks by
//     host (topo.Build) and publishes the result under layoutKey, which the
//     other ranks read. One rank reads n facts and every other rank one
//     value, so a job of 64 ranks does not make 64*63 lookups at Init.

// layoutKey is where rank 0 publishes the layout it derived from the
// ranks' facts: the server index of each rank, as JSON.
const layoutKey = "topo/layout"

// factsLookups bounds how many lookups of facts rank 0 has in flight.
const factsLookups = 16

// factsSource is where rank 0 reads the ranks' facts (the world's
// linkSet, which caches them for the links it opens later).
type factsSource interface {
	PeerFacts(ctx context.Context, peer int) (topo.Facts, error)
}

// publishLayout is rank 0's part when no table says: it groups the ranks
// by the host identities they published and puts the grouping under
// layoutKey. It waits for every rank's facts, which each publishes before
// the Init barrier, so it runs before rank 0 enters that barrier.
func publishLayout(ctx context.Context, links factsSource, n int, ctl controlPlane) (*plan.Layout, error) {
	facts := make([]topo.Facts, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, factsLookups)
	for r := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			facts[r], errs[r] = links.PeerFacts(ctx, r)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	tp, err := topo.Build(facts, false)
	if err != nil {
		return nil, err
	}
	labels := make([]int, n)
	for g, rs := range tp.Servers {
		for _, r := range rs {
			labels[r] = g
		}
	}
	blob, err := json.Marshal(labels)
	if err != nil {
		return nil, err
	}
	if err := ctl.Put(ctx, layoutKey, blob); err != nil {
		return nil, fmt.Errorf("publish the server layout: %w", err)
	}
	return plan.NewLayout(labels)
}

// fetchLayout is the other ranks' part: the layout rank 0 published.
func fetchLayout(ctx context.Context, ctl controlPlane, size int) (*plan.Layout, error) {
	blob, err := ctl.Get(ctx, layoutKey)
	if err != nil {
		return nil, fmt.Errorf("look up the server layout rank 0 published: %w", err)
	}
	var labels []int
	if err := json.Unmarshal(blob, &labels); err != nil {
		return nil, fmt.Errorf("the server layout rank 0 published: %w", err)
	}
	if len(labels) != size {
		return nil, fmt.Errorf("the server layout rank 0 published places %d ranks, the job has %d", len(labels), size)
	}
	return plan.NewLayout(labels)
}

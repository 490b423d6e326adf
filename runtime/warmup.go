package runtime

import (
	"context"
	"errors"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// Init leaves a rank warm for its first collectives.
//
// A rank's first collective used to cost it 150-250 us more than the next
// at 8 bytes, and the first collective that needed a link the link's
// set-up, milliseconds (docs/performance.md, "Warm from the first call"):
// the code and tables of the selector, the algorithms, the executor and
// the links had never been touched by this process, and every first touch
// of a page is a trap to the hypervisor on the project's machines. So on
// a host that is not crowded (where the links read their rings ahead,
// switchboard.lazyRings), Init does two things before it returns:
//
//   - while the rank waits for the others at the control plane's barrier,
//     an idle moment for every rank but the last to arrive, it prices and
//     builds the plans of every collective at a small and a large size and
//     runs the commonest kernels once (warmUp), and throws the results
//     away: what stays is the memory they touched;
//   - then it makes the job's first collective itself, an AllReduce of 4
//     bytes (warmCall), which opens the links the small calls use, every
//     peer's up to 4 ranks, and runs their road through the executor and
//     the links once. A job that starts with a Barrier, as most do, paid
//     that set-up in the Barrier; Init's time grows by what the Barrier's
//     shrinks. NCCL connects at init too.
//
// The program's calls are chosen, logged and numbered as if Init had made
// none. On a crowded host neither runs: CPU time is what is scarce there,
// and the Barrier at scale opens other links than a small AllReduce.

// warmCall makes the job's first collective, an AllReduce of 4 bytes
// (see above).
func (c *Comm) warmCall(ctx context.Context) error {
	c.warming = true
	defer func() { c.warming = false }()
	one := []int32{1}
	switch err := AllReduce(ctx, c, one, one, Sum); {
	case errors.Is(err, ErrInvalidArgument):
		// Algorithms forced (HCCL_ALGO) that cannot serve this call:
		// every rank refused it alike, before sending anything.
		return nil
	case err != nil:
		return err
	}
	// The program's calls are numbered from 1, as if Init had made none
	// (errors name calls by number). Reusing the number cannot mix the
	// two calls: every rank reads its peers' frames of this one, which
	// come first on each link, before any of the next.
	c.seq = 0
	return nil
}

// warmShapes are the element counts the warm-up prices and builds: 8
// bytes of float32 and 1 MiB.
var warmShapes = [...]int{2, 1 << 18}

// warmColls are the collectives it warms (AlltoAllV builds from its
// counts, which only a call has).
var warmColls = [...]plan.Coll{plan.Barrier, plan.AllReduce, plan.Broadcast, plan.Reduce,
	plan.AllGather, plan.ReduceScatter, plan.AlltoAll}

// warmUp prices and builds the plans of warmColls at warmShapes for rank
// of size ranks on the servers of layout, and runs the float sum
// kernels once. Errors are ignored: the real call reports its own.
func warmUp(sel *selector.Selector, rank, size int, layout *plan.Layout) {
	for _, coll := range warmColls {
		for _, n := range warmShapes {
			req := plan.Request{Coll: coll, Count: n, Rank: rank, Size: size, Layout: layout}
			if coll == plan.Barrier {
				req.Count = 0
			}
			if ch, err := sel.Price(selector.CallFor(req, 4)); err == nil {
				ch.Algo.Build(req)
			}
		}
	}
	var a, b, dst [64]byte
	for _, d := range [...]reduce.DType{reduce.Float32, reduce.Float64} {
		if k, err := reduce.Kernel(d, reduce.Sum); err == nil {
			k(dst[:], a[:], b[:])
		}
	}
}

package runtime

import (
	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// A training loop or a benchmark makes the same collective call over and
// over. Planning it again each time (the selector's answer, the plan
// cache's key, the executor's description of the call and its reduction
// kernel) cost 0.08 us of an 8-byte AllReduce at np 2: 0.33 against 0.41
// us at the median of 12 interleaved runs of the call written straight
// against the link, without and with it. So the communicator keeps the
// last call's plan and executor call, and a call with the same key reuses
// them: the 8-byte AllReduce went from 0.62 to 0.55 us (16 runs
// interleaved with the build before and with Open MPI, 0.48; -n 50000).
// SetAlgo forgets them: the algorithm may change (TestSetAlgo).

// callKey is what a collective's plan and executor call depend on besides
// the communicator: the request's shape, the element type and the
// reduction operator.
type callKey struct {
	coll    plan.Coll
	count   int
	root    int
	inPlace bool
	dtype   reduce.DType
	op      ReduceOp
}

// lastCall is the last keyed call's plan and executor call (its sequence
// number aside).
type lastCall struct {
	key  callKey
	plan *plan.Plan
	ec   executor.Call
}

// keyOf returns a's key, or false for the calls that have no key of this
// kind: AlltoAllV, whose plan depends on every peer's counts (planCache
// keeps the last one), and point-to-point calls, which bring their plan.
func keyOf(a *call) (callKey, bool) {
	if a.p2pPlan != nil || a.req.Coll == plan.AlltoAllV {
		return callKey{}, false
	}
	return callKey{coll: a.req.Coll, count: a.req.Count, root: a.req.Root, inPlace: a.req.InPlace, dtype: a.dtype, op: a.op}, true
}

package runtime

import (
	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// A training loop or a benchmark makes the same collective call over and
// over. Planning it again each time (the selector's answer, the plan
// cache's key, the executor's description of the call and its reduction
// kernel) cost a fifth of an 8-byte AllReduce at np 2
// (docs/measurements.md#the-last-calls-plan-kept). So the communicator
// keeps the last call's plan and executor call, and a call with the same
// key reuses them.
// An AlltoAllV repeats only with the same counts and displacements.
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
	key   callKey
	plan  *plan.Plan
	split split // the plan's cut over channels (channels.go)
	ec    executor.Call
}

// keyOf returns a's key, or false for point-to-point calls, which bring
// their plan. An AlltoAllV's plan also depends on every peer's counts and
// displacements, which the key leaves out: repeats checks them.
func keyOf(a *call) (callKey, bool) {
	if a.p2pPlan != nil {
		return callKey{}, false
	}
	return callKey{coll: a.req.Coll, count: a.req.Count, root: a.req.Root, inPlace: a.req.InPlace, dtype: a.dtype, op: a.op}, true
}

// repeats reports whether a, of key, repeats the last call. The last
// AlltoAllV's plan is the plan cache's last one (planCache.vPlan), built
// for the counts it keeps; a repeat must have those counts.
func (c *Comm) repeats(a *call, key callKey) bool {
	if c.last.plan == nil || c.last.key != key {
		return false
	}
	if a.req.Coll != plan.AlltoAllV {
		return true
	}
	return c.last.plan == c.plans.vPlan && sameVCounts(&c.plans.vReq, &a.req)
}

package selector

import "github.com/hcclrun/hcclrun/runtime/plan"

// CallFor is the Call the selector prices for req with elements of
// elemSize bytes: the size as Call documents it, and the servers of
// req.Layout (TopoOf). AlltoAllV's size is 0: its counts differ from rank
// to rank, and its algorithm must not (vChoice).
func CallFor(req plan.Request, elemSize int) Call {
	var elems int64
	switch req.Coll {
	case plan.AllReduce, plan.Broadcast, plan.Reduce:
		elems = int64(req.Count)
	case plan.AllGather, plan.ReduceScatter, plan.AlltoAll:
		elems = int64(req.Size) * int64(req.Count)
	}
	return Call{Coll: req.Coll, Bytes: elems * int64(elemSize), Topo: TopoOf(req.Size, req.Layout)}
}

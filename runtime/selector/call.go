package selector

import "github.com/hcclrun/hcclrun/runtime/plan"

// CallFor is the Call the selector prices for req with elements of
// elemSize bytes: the size as Call documents it, and the servers
// req.PerServer implies (one when it is 0). AlltoAllV's size is 0: its
// counts differ from rank to rank, and its algorithm must not (vChoice).
func CallFor(req plan.Request, elemSize int) Call {
	var elems int64
	switch req.Coll {
	case plan.AllReduce, plan.Broadcast, plan.Reduce:
		elems = int64(req.Count)
	case plan.AllGather, plan.ReduceScatter, plan.AlltoAll:
		elems = int64(req.Size) * int64(req.Count)
	}
	servers := 1
	if req.PerServer > 0 && req.PerServer < req.Size {
		servers = (req.Size + req.PerServer - 1) / req.PerServer
	}
	return Call{Coll: req.Coll, Bytes: elems * int64(elemSize), Topo: Topo{Ranks: req.Size, Servers: servers}}
}

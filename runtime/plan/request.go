package plan

// Request is what an algorithm builds a plan for: one rank's view of one
// collective call. Counts are in elements.
type Request struct {
	Coll Coll
	Rank int
	Size int

	// Count is the per-call element count:
	//   AllReduce, Broadcast, Reduce: len(buffer)
	//   AllGather: len(send) (each rank's share; len(recv) = Size*Count)
	//   ReduceScatter: len(recv) (each rank's share; len(send) = Size*Count)
	//   AlltoAll: elements per peer block (len(send) = len(recv) = Size*Count)
	//   AlltoAllV, Barrier: unused (0)
	Count int

	// Root is the root rank of Broadcast and Reduce, else 0.
	Root int

	// InPlace tells that the send and receive buffers alias in the NCCL
	// sense: AllReduce send == recv; AllGather send == recv[Rank*Count:];
	// ReduceScatter recv == send[Rank*Count:]; Broadcast and Reduce: send
	// == recv on the root (non-roots of a Broadcast only have recv, and
	// non-roots of a Reduce only send). The plan must then be correct
	// when reads of BufSend see earlier writes to BufRecv.
	InPlace bool

	// AlltoAllV counts and displacements, in elements, of length Size.
	SendCounts, SendDispls, RecvCounts, RecvDispls []int

	// Layout is which server each rank is on, nil for one server. It is
	// the communicator's, the same for every call; a non-nil layout places
	// Size ranks. The algorithms that reach every peer over shared memory
	// refuse a layout of several servers, the hierarchical ones need one.
	Layout *Layout

	// ScratchLimit bounds Plan.ScratchLen, in elements; 0 means no bound.
	// Algorithms that can trade steps for scratch (pat) honour it and fail
	// when they cannot; the others ignore it.
	ScratchLimit int
}

// Algorithm builds plans. Implementations are pure and deterministic: the
// same request gives the same plan, and they do no I/O.
type Algorithm interface {
	// Name is the algorithm's name as HCCL_ALGO spells it, e.g. "ring".
	Name() string
	// Build returns the rank's plan for req, or an error saying why the
	// algorithm cannot serve the request.
	Build(req Request) (*Plan, error)
}

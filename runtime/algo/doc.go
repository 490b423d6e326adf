// Package algo builds collective plans: one pure, deterministic
// plan.Algorithm per family (ring, binomial tree, dissemination barrier,
// pairwise exchange, ...), each in its own file that opens with the schedule
// it follows, walked for 4 ranks.
//
// The algorithms (Lookup names) and the collectives they serve:
//
//	ring           every collective (AlltoAll/AlltoAllV by shifted pairwise exchange)
//	tree           Broadcast, Reduce (binomial, any root)
//	dissemination  Barrier
//	pairwise       AlltoAll, AlltoAllV (HCCL order, MaxPeersInFlight per step)
//	rhd            AllReduce, ReduceScatter, AllGather (folding for any n)
//	mesh           every collective, all peers at once (one server)
//	oneshot        AllReduce in one network step (one server, small messages)
//	pat            AllGather, ReduceScatter (log2 n steps, any n)
//	hier           AllReduce, AllGather, ReduceScatter, Broadcast, Reduce
//	               (two levels; needs a Request.Layout of several servers,
//	               of any sizes)
//
// Words used throughout:
//   - chunk: one rank's share of a buffer, count split into Size parts as
//     equal as possible (the first count%Size chunks are one element
//     longer; with count < Size some chunks are empty);
//   - block: the Count elements that belong to one rank in AllGather,
//     ReduceScatter and AlltoAll buffers (len(buffer) = Size*Count);
//   - piece: a part of a buffer that a pipelined chain forwards in its own
//     step;
//   - segment: the executor's pipelining unit. Algorithms never see
//     segments: the executor splits every op of a plan into segments.
//
// Transfers of 0 elements are left out of plans whenever both sides can
// tell from the request that the transfer would be empty, and kept where
// they carry meaning (Barrier, AlltoAllV, whose receiver cannot know the
// sender's count and must see the mismatch rather than hang).
//
// Nothing here does I/O; every algorithm is tested by running all ranks'
// plans in plan.Simulate.
package algo

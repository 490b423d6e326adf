package algo

// Ring: every rank talks only to its neighbours, right = rank+1 and
// left = rank-1 (mod n). Bandwidth optimal for large messages, n-1 (or
// 2(n-1)) latencies.
//
// AllReduce, 4 ranks, chunks a b c d (chunk k = k-th quarter of the buffer):
// a reduce-scatter then an all-gather, 2(n-1) = 6 steps.
//
//	step   rank 0          rank 1          rank 2          rank 3
//	0      send a  recv d  send b  recv a  send c  recv b  send d  recv c   (recv reduces)
//	1      send d  recv c  send a  recv d  send b  recv a  send c  recv b
//	2      send c  recv b  send d  recv c  send a  recv d  send b  recv a
//	       -> rank 0 owns the full b, rank 1 c, rank 2 d, rank 3 a
//	3      send b  recv a  send c  recv b  send d  recv c  send a  recv d   (recv stores)
//	4      send a  recv d  send b  recv a  send c  recv b  send d  recv c
//	5      send d  recv c  send a  recv d  send b  recv a  send c  recv b
//
// Each chunk is reduced along one path and ends on one rank, which the
// all-gather then copies everywhere: all ranks get bit-identical results
// even for floating point. In step s of the reduce-scatter a rank sends
// chunk rank-s and reduces chunk rank-s-1; the first step reads the send
// buffer, later ones forward what they reduced in the receive buffer.
// In-place is free: RecvReduce's source and destination are the same
// memory, and no chunk is read after it was written by anything else.
//
// AllGather (block k = rank k's contribution): step s sends block rank-s
// and receives block rank-s-1, n-1 steps; out of place, step 0 also copies
// the rank's own block into the receive buffer.
//
// ReduceScatter: step s sends block rank-s-1 and reduces block rank-s-2
// with its own send block, so the last step (s = n-2) reduces block rank
// itself, straight into the receive buffer. Partial blocks live in scratch
// between steps: one block out of place (alternating with the receive
// buffer), two in place, where the receive buffer is the rank's own send
// block and must not be written before the last step reads it.
//
// Broadcast is a chain root -> root+1 -> ... -> root-1 cut into n pieces:
// the rank at chain position q receives piece j in step j+q-1 and forwards
// it in step j+q, so pieces travel down the chain one behind another
// (2n-2 steps for the last rank). Reduce is the chain the other way round,
// starting at root+1 and ending at the root, each rank reducing a piece
// with its own before passing it on (non-roots accumulate in scratch).
//
// AlltoAll and AlltoAllV use pairwise exchange by shifts: in step s = 1..n-1
// a rank sends its block for rank+s and receives the block of rank-s; the
// own block is copied locally in step 0.
//
// Barrier sends an empty message right and waits for one from the left,
// n-1 times: after step s a rank knows that the s+1 ranks to its left have
// arrived.

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Ring builds ring plans for every collective.
type Ring struct{}

// Name implements plan.Algorithm.
func (Ring) Name() string { return "ring" }

// Colls implements Collectives: every collective.
func (Ring) Colls() []plan.Coll {
	return []plan.Coll{plan.AllReduce, plan.AllGather, plan.ReduceScatter, plan.Broadcast,
		plan.Reduce, plan.AlltoAll, plan.AlltoAllV, plan.Barrier}
}

// Build implements plan.Algorithm.
func (a Ring) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	b := newBuilder(req, a.Name())
	switch req.Coll {
	case plan.AllReduce:
		ringAllReduce(b, req)
	case plan.AllGather:
		ringAllGather(b, req)
	case plan.ReduceScatter:
		ringReduceScatter(b, req)
	case plan.Broadcast:
		chainBroadcast(b, req)
	case plan.Reduce:
		chainReduce(b, req)
	case plan.AlltoAll, plan.AlltoAllV:
		shiftAlltoAll(b, req)
	case plan.Barrier:
		ringBarrier(b, req)
	default:
		return nil, fmt.Errorf("rank %d: ring: %s: %w", req.Rank, req.Coll, ErrUnsupported)
	}
	return b.plan(), nil
}

// localCopy is what a one-rank collective does: copy send to recv unless
// they are the same memory.
func localCopy(b *builder, req plan.Request, n int) {
	if !req.InPlace {
		b.step(copyOp(sendBuf(0, n), recvBuf(0, n)))
	}
}

func ringAllReduce(b *builder, req plan.Request) {
	n, r, c := req.Size, req.Rank, req.Count
	if n == 1 {
		localCopy(b, req, c)
		return
	}
	ch := func(buf plan.Buf, k int) plan.Region {
		off, l := chunk(c, n, mod(k, n))
		return reg(buf, off, l)
	}
	right, left := mod(r+1, n), mod(r-1, n)
	ringReduceScatterPhase(b, n, r, right, left, ch)
	ringAllGatherPhase(b, n, r, right, left, ch)
}

// ringReduceScatterPhase is the first half of a ring AllReduce among n
// members, this one member r with neighbours right and left (ranks).
// ch(buf, k) is chunk k (any integer, taken mod n) of buffer buf. Member r
// ends owning the reduced chunk r+1 in BufRecv.
func ringReduceScatterPhase(b *builder, n, r, right, left int, ch func(buf plan.Buf, k int) plan.Region) {
	for s := 0; s < n-1; s++ {
		src := ch(plan.BufRecv, r-s)
		if s == 0 {
			src = ch(plan.BufSend, r)
		}
		k := r - s - 1
		b.step(send(right, src), recvReduce(left, ch(plan.BufSend, k), ch(plan.BufRecv, k)))
	}
}

// ringAllGatherPhase is the second half: member r owns chunk r+1 of
// BufRecv and ends with all of them.
func ringAllGatherPhase(b *builder, n, r, right, left int, ch func(buf plan.Buf, k int) plan.Region) {
	for s := 0; s < n-1; s++ {
		b.step(send(right, ch(plan.BufRecv, r+1-s)), recv(left, ch(plan.BufRecv, r-s)))
	}
}

func ringAllGather(b *builder, req plan.Request) {
	n, r, c := req.Size, req.Rank, req.Count
	if n == 1 {
		localCopy(b, req, c)
		return
	}
	right, left := mod(r+1, n), mod(r-1, n)
	for s := 0; s < n-1; s++ {
		src := recvBuf(mod(r-s, n)*c, c)
		var own *plan.Op
		if s == 0 {
			src = sendBuf(0, c)
			if !req.InPlace {
				own = copyOp(sendBuf(0, c), recvBuf(r*c, c))
			}
		}
		b.step(own, send(right, src), recv(left, recvBuf(mod(r-s-1, n)*c, c)))
	}
}

func ringReduceScatter(b *builder, req plan.Request) {
	n, r, c := req.Size, req.Rank, req.Count
	if n == 1 {
		if !req.InPlace {
			b.step(copyOp(sendBuf(0, c), recvBuf(0, c)))
		}
		return
	}
	right, left := mod(r+1, n), mod(r-1, n)
	// slot is where the partial block reduced in step s lives.
	slot := func(s int) plan.Region {
		switch {
		case s == n-2:
			return recvBuf(0, c)
		case req.InPlace:
			return scratchBuf((s%2)*c, c)
		case (n-2-s)%2 == 0:
			return recvBuf(0, c)
		default:
			return scratchBuf(0, c)
		}
	}
	if n > 2 {
		if req.InPlace && n > 3 {
			b.scratch(2 * c)
		} else {
			b.scratch(c)
		}
	}
	for s := 0; s < n-1; s++ {
		src := sendBuf(mod(r-s-1, n)*c, c)
		if s > 0 {
			src = slot(s - 1)
		}
		k := mod(r-s-2, n)
		b.step(send(right, src), recvReduce(left, sendBuf(k*c, c), slot(s)))
	}
}

// chainBroadcast pipelines n pieces down the chain root, root+1, ...
func chainBroadcast(b *builder, req plan.Request) {
	n, r, c := req.Size, req.Rank, req.Count
	q := mod(r-req.Root, n)
	if q == 0 {
		localOwn := copyOp(sendBuf(0, c), recvBuf(0, c))
		if req.InPlace {
			localOwn = nil
		}
		if n == 1 {
			b.step(localOwn)
			return
		}
		for t := 0; t < n; t++ {
			off, l := chunk(c, n, t)
			var own *plan.Op
			if t == 0 {
				own = localOwn
			}
			b.step(own, send(mod(r+1, n), sendBuf(off, l)))
		}
		return
	}
	for t := q - 1; t < q+n; t++ {
		var in, out *plan.Op
		if j := t - q + 1; j >= 0 && j < n {
			off, l := chunk(c, n, j)
			in = recv(mod(r-1, n), recvBuf(off, l))
		}
		if j := t - q; q < n-1 && j >= 0 && j < n {
			off, l := chunk(c, n, j)
			out = send(mod(r+1, n), recvBuf(off, l))
		}
		b.step(in, out)
	}
}

// chainReduce pipelines n pieces along root+1, root+2, ..., root.
func chainReduce(b *builder, req plan.Request) {
	n, r, c := req.Size, req.Rank, req.Count
	if n == 1 {
		localCopy(b, req, c)
		return
	}
	q := mod(r-req.Root-1, n) // the root is last, q = n-1
	acc := func(off, l int) plan.Region { return scratchBuf(off, l) }
	if q == n-1 {
		acc = recvBuf
	} else if q > 0 {
		b.scratch(c)
	}
	for t := 0; t < q+n; t++ {
		var in, out *plan.Op
		if j := t - q + 1; q > 0 && j >= 0 && j < n {
			off, l := chunk(c, n, j)
			in = recvReduce(mod(r-1, n), sendBuf(off, l), acc(off, l))
		}
		if j := t - q; q < n-1 && j >= 0 && j < n {
			off, l := chunk(c, n, j)
			src := acc(off, l)
			if q == 0 {
				src = sendBuf(off, l)
			}
			out = send(mod(r+1, n), src)
		}
		b.step(in, out)
	}
}

// alltoallBlocks returns, for peer p, the block this rank sends to p and
// the block it receives from p.
func alltoallBlocks(req plan.Request, p int) (out, in plan.Region) {
	if req.Coll == plan.AlltoAllV {
		return sendBuf(req.SendDispls[p], req.SendCounts[p]), recvBuf(req.RecvDispls[p], req.RecvCounts[p])
	}
	return sendBuf(p*req.Count, req.Count), recvBuf(p*req.Count, req.Count)
}

// alltoallOps returns the pair of transfers with peer p. AlltoAllV keeps
// empty transfers: the receiver cannot know the sender's count.
func alltoallOps(req plan.Request, p int) (*plan.Op, *plan.Op) {
	out, in := alltoallBlocks(req, p)
	if req.Coll == plan.AlltoAllV {
		return send0(p, out), recv0(p, in)
	}
	return send(p, out), recv(p, in)
}

func selfCopy(req plan.Request) *plan.Op {
	out, in := alltoallBlocks(req, req.Rank) // check made the lengths equal
	return copyOp(out, in)
}

func shiftAlltoAll(b *builder, req plan.Request) {
	n, r := req.Size, req.Rank
	self := selfCopy(req)
	if n == 1 {
		b.step(self)
		return
	}
	for s := 1; s < n; s++ {
		o, _ := alltoallOps(req, mod(r+s, n))
		_, i := alltoallOps(req, mod(r-s, n))
		if s == 1 {
			b.step(self, o, i)
		} else {
			b.step(o, i)
		}
	}
}

func ringBarrier(b *builder, req plan.Request) {
	n, r := req.Size, req.Rank
	for s := 0; s < n-1; s++ {
		b.step(send0(mod(r+1, n), plan.Region{}), recv0(mod(r-1, n), plan.Region{}))
	}
}

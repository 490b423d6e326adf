package algo

// Mesh: every rank talks to every other rank at once, the shape of a
// server's shared memory where all pairs have their own link. One network
// latency per phase, but n-1 links per rank: for ranks of one server only.
//
// AllReduce, 4 ranks, chunks a b c d, is a mesh reduce-scatter then a mesh
// all-gather:
//
//	step 0: rank 0 sends b to 1, c to 2, d to 3 and receives a from all three;
//	        the a from rank 1 is reduced on arrival with its own a into recv,
//	        those from ranks 2 and 3 land in scratch
//	steps 1-2: rank 0 reduces the scratch copies into recv, one per step
//	           (two reductions into the same memory cannot share a step)
//	step 3: rank 0 sends its reduced a to 1, 2, 3 and receives b, c, d.
//
// Each chunk is reduced on one rank, so results are identical everywhere.
// ReduceScatter is the first phase on whole blocks, AllGather the second.
// Broadcast is one step, the root sending to everyone; Reduce gathers at
// the root and reduces there; AlltoAll and AlltoAllV exchange every block in
// one step; Barrier is one step of empty messages to and from everyone.
//
// OneShot is AllReduce in one network step for small messages: every rank
// sends its whole input to every other rank, then reduces all n inputs
// locally in rank order 0, 1, ..., n-1. Every element is reduced n times
// over, once per rank, but each rank performs the same operations in the
// same order, so floating-point results are still identical everywhere.

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Mesh builds direct all-pairs plans.
type Mesh struct{}

// Name implements plan.Algorithm.
func (Mesh) Name() string { return "mesh" }

// Colls implements Collectives.
func (Mesh) Colls() []plan.Coll {
	return []plan.Coll{plan.AllReduce, plan.ReduceScatter, plan.AllGather, plan.Broadcast,
		plan.Reduce, plan.AlltoAll, plan.AlltoAllV, plan.Barrier}
}

// Build implements plan.Algorithm.
func (a Mesh) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	if err := oneServer(a, req); err != nil {
		return nil, err
	}
	b := newBuilder(req, a.Name())
	n, r, c := req.Size, req.Rank, req.Count
	if n == 1 && req.Coll != plan.AlltoAll && req.Coll != plan.AlltoAllV {
		if req.Coll != plan.Barrier {
			localCopy(b, req, c)
		}
		return b.plan(), nil
	}
	switch req.Coll {
	case plan.AllReduce:
		ch := func(buf plan.Buf, k int) plan.Region {
			off, l := chunk(c, n, k)
			return reg(buf, off, l)
		}
		meshReduceTo(b, req, r, ch(plan.BufRecv, r).Len, func(q int) plan.Region { return ch(plan.BufSend, q) })
		ops := []*plan.Op{}
		for _, q := range others(n, r) {
			ops = append(ops, send(q, ch(plan.BufRecv, r)), recv(q, ch(plan.BufRecv, q)))
		}
		b.step(ops...)
	case plan.ReduceScatter:
		meshReduceTo(b, req, r, c, func(q int) plan.Region { return sendBuf(q*c, c) })
	case plan.Reduce:
		if r != req.Root {
			b.step(send(req.Root, sendBuf(0, c)))
			break
		}
		meshReduceTo(b, req, r, c, func(int) plan.Region { return sendBuf(0, c) })
	case plan.AllGather:
		ops := []*plan.Op{}
		if !req.InPlace {
			ops = append(ops, copyOp(sendBuf(0, c), recvBuf(r*c, c)))
		}
		for _, q := range others(n, r) {
			ops = append(ops, send(q, sendBuf(0, c)), recv(q, recvBuf(q*c, c)))
		}
		b.step(ops...)
	case plan.Broadcast:
		if r != req.Root {
			b.step(recv(req.Root, recvBuf(0, c)))
			break
		}
		ops := []*plan.Op{}
		if !req.InPlace {
			ops = append(ops, copyOp(sendBuf(0, c), recvBuf(0, c)))
		}
		for _, q := range others(n, r) {
			ops = append(ops, send(q, sendBuf(0, c)))
		}
		b.step(ops...)
	case plan.AlltoAll, plan.AlltoAllV:
		ops := []*plan.Op{selfCopy(req)}
		for _, q := range others(n, r) {
			o, i := alltoallOps(req, q)
			ops = append(ops, o, i)
		}
		b.step(ops...)
	case plan.Barrier:
		ops := []*plan.Op{}
		for _, q := range others(n, r) {
			ops = append(ops, send0(q, plan.Region{}), recv0(q, plan.Region{}))
		}
		b.step(ops...)
	default:
		return nil, fmt.Errorf("rank %d: mesh: %s: %w", req.Rank, req.Coll, ErrUnsupported)
	}
	return b.plan(), nil
}

// oneServer refuses jobs that span servers: all-pairs traffic belongs on
// shared memory, and across servers it would open n-1 connections per rank.
func oneServer(a plan.Algorithm, req plan.Request) error {
	if sv := req.Layout.Servers(); sv > 1 {
		return fmt.Errorf("rank %d: %s runs within one server, the job spans %d (%s ranks): %w",
			req.Rank, a.Name(), sv, req.Layout, ErrUnsupported)
	}
	return nil
}

// others lists the ranks other than r, starting after r so that no rank is
// everyone's first peer.
func others(n, r int) []int {
	ps := make([]int, 0, n-1)
	for k := 1; k < n; k++ {
		ps = append(ps, mod(r+k, n))
	}
	return ps
}

// meshReduceTo is the gathering half of a mesh reduction onto rank `to`
// (this rank when it is called): every other rank's part(to) arrives in one
// step, the first reduced on arrival into recv[0:l] (with this rank's own
// part as the other operand), the rest staged in scratch and reduced one
// per step. When `to` is this rank, every other rank must at the same time
// send this rank's part; part(q) is what this rank contributes to q's
// result. For Reduce only the root calls it, with no sends.
func meshReduceTo(b *builder, req plan.Request, to, l int, part func(q int) plan.Region) {
	n, r := req.Size, req.Rank
	peers := others(n, r)
	dst := recvBuf(0, l)
	if req.Coll == plan.AllReduce {
		dst = part(r) // the own chunk's place, in recv
		dst.Buf = plan.BufRecv
	}
	ops := []*plan.Op{}
	if req.Coll != plan.Reduce {
		for _, q := range peers {
			ops = append(ops, send(q, part(q)))
		}
	}
	b.scratch((n - 2) * l)
	for k, q := range peers {
		if k == 0 {
			ops = append(ops, recvReduce(q, part(r), dst))
		} else {
			ops = append(ops, recv(q, scratchBuf((k-1)*l, l)))
		}
	}
	b.step(ops...)
	for k := 1; k < len(peers); k++ {
		b.step(reduceOp(dst, scratchBuf((k-1)*l, l)))
	}
}

// OneShot builds one-network-step AllReduce plans for small messages.
type OneShot struct{}

// Name implements plan.Algorithm.
func (OneShot) Name() string { return "oneshot" }

// Colls implements Collectives.
func (OneShot) Colls() []plan.Coll { return []plan.Coll{plan.AllReduce} }

// Build implements plan.Algorithm.
func (a OneShot) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	if err := oneServer(a, req); err != nil {
		return nil, err
	}
	b := newBuilder(req, a.Name())
	n, r, c := req.Size, req.Rank, req.Count
	if n == 1 {
		localCopy(b, req, c)
		return b.plan(), nil
	}
	// Rank k's input sits in scratch slot k (slot k-1 past this rank); in
	// place, this rank's own input is stashed in the last slot, because
	// the receive buffer it shares is about to be overwritten.
	input := func(k int) plan.Region {
		switch {
		case k == r && !req.InPlace:
			return sendBuf(0, c)
		case k == r:
			return scratchBuf((n-1)*c, c)
		case k < r:
			return scratchBuf(k*c, c)
		}
		return scratchBuf((k-1)*c, c)
	}
	if n == 2 {
		// Two ranks: reduce the peer's input on arrival, in the order
		// 0, 1 on both ranks, straight into recv out of place: one step
		// instead of three (receive into scratch, copy, reduce); an
		// 8-byte AllReduce's medians went 0.495 -> 0.40 us and 0.475 ->
		// 0.45 us in two sets of 8 runs interleaved with the plan of
		// three steps. In place the send reads the buffer the result
		// goes to, so the result waits in scratch for a step of its
		// own: two steps and one copy, where the general plan below
		// takes two or three steps and two or three copies (8 KiB in
		// place, 6 pairs of runs interleaved with that plan: 2.42-2.91
		// -> 2.18-2.52 us).
		q := 1 - r
		dst := recvBuf(0, c)
		if req.InPlace {
			b.scratch(c)
			dst = scratchBuf(0, c)
		}
		in := recvReduce(q, sendBuf(0, c), dst)
		if r == 1 {
			in = recvReducePeerFirst(q, sendBuf(0, c), dst)
		}
		b.step(send(q, sendBuf(0, c)), in)
		if req.InPlace {
			b.step(copyOp(dst, recvBuf(0, c)))
		}
		return b.plan(), nil
	}
	b.scratch((n - 1) * c)
	ops := []*plan.Op{}
	if req.InPlace {
		b.scratch(n * c)
		ops = append(ops, copyOp(sendBuf(0, c), input(r)))
	}
	for _, q := range others(n, r) {
		ops = append(ops, send(q, sendBuf(0, c)), recv(q, input(q)))
	}
	b.step(ops...)
	if !(req.InPlace && r == 0) {
		b.step(copyOp(input(0), recvBuf(0, c)))
	}
	for k := 1; k < n; k++ {
		b.step(reduceOp(recvBuf(0, c), input(k)))
	}
	return b.plan(), nil
}

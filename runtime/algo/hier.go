package algo

// Hier: hierarchical collectives for jobs on several servers with K ranks
// each (Request.PerServer), ranks of a server contiguous. Rank r is local
// rank l = r mod K of server g = r / K. The "column" of l is the s = n/K
// ranks with local rank l, one per server. Network traffic then only flows
// within columns: each rank carries 1/K of what the busiest rank of a flat
// ring sends between servers, and the cross-server phases take
// O(log s) latencies instead of O(n).
//
// AllReduce, 2 servers x 2 ranks (ranks 0 1 | 2 3), chunks a b:
//
//	1. ring reduce-scatter within each server (K-1 steps): rank 0 and 2
//	   end owning their server's partial b, ranks 1 and 3 partial a
//	2. AllReduce (RHD) of the owned chunk within each column: 0<->2 on b,
//	   1<->3 on a; now every chunk is complete on its owners
//	3. ring all-gather within each server (K-1 steps).
//
// AllGather: (1) RHD AllGather within the column, into scratch laid out
// column by column (column l' holds the blocks of ranks g'*K+l' for every
// server g'); (2) ring AllGather of whole columns within the server, in
// place in that scratch; (3) one local step copying every block to its
// rank's place in the receive buffer. ReduceScatter is the mirror: copy the
// send buffer into scratch column by column, ring ReduceScatter of columns
// within the server (in place), RHD ReduceScatter of the own column within
// the column of ranks.
//
// Broadcast: binomial tree among the root's column (the root's local rank
// on every server), then a binomial tree within each server from that
// rank. Reduce: the same backwards, partial results of the column ranks
// other than the root living in scratch.

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Hier builds two-level plans: intra-server and inter-server phases.
type Hier struct{}

// Name implements plan.Algorithm.
func (Hier) Name() string { return "hier" }

// Colls implements Collectives.
func (Hier) Colls() []plan.Coll {
	return []plan.Coll{plan.AllReduce, plan.AllGather, plan.ReduceScatter, plan.Broadcast, plan.Reduce}
}

// Build implements plan.Algorithm.
func (a Hier) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	n, k := req.Size, req.PerServer
	if k < 2 || k >= n || n%k != 0 {
		return nil, fmt.Errorf("rank %d: hier needs two or more servers of two or more ranks each, evenly (%d ranks, %d per server): %w",
			req.Rank, n, k, ErrUnsupported)
	}
	h := hier{req: req, k: k, s: n / k, g: req.Rank / k, l: req.Rank % k, b: newBuilder(req, a.Name())}
	var err error
	switch req.Coll {
	case plan.AllReduce:
		err = h.allReduce()
	case plan.AllGather:
		err = h.allGather()
	case plan.ReduceScatter:
		err = h.reduceScatter()
	case plan.Broadcast:
		err = h.broadcast()
	case plan.Reduce:
		err = h.reduce()
	default:
		err = fmt.Errorf("rank %d: hier: %s: %w", req.Rank, req.Coll, ErrUnsupported)
	}
	if err != nil {
		return nil, err
	}
	return h.b.plan(), nil
}

type hier struct {
	req        plan.Request
	k, s, g, l int
	b          *builder
}

// server lists the ranks of this rank's server, column those of its
// column (of local rank l).
func (h *hier) server() []int {
	m := make([]int, h.k)
	for i := range m {
		m[i] = h.g*h.k + i
	}
	return m
}

func (h *hier) column(l int) []int {
	m := make([]int, h.s)
	for j := range m {
		m[j] = j*h.k + l
	}
	return m
}

// bufMap says where a sub-plan's buffers are in this plan: a region of
// the parent whose Off is the base added to the sub-plan's offsets.
type bufMap map[plan.Buf]plan.Region

func (m bufMap) apply(r plan.Region) plan.Region {
	if r.Buf == plan.BufNone {
		return r
	}
	base := m[r.Buf]
	return plan.Region{Buf: base.Buf, Off: base.Off + r.Off, Len: r.Len}
}

// embed builds the plan of algorithm a for sub, a request among members
// (sub.Rank indexes members), and appends its steps with peers renamed to
// ranks and buffers moved as m says.
func (h *hier) embed(a plan.Algorithm, sub plan.Request, members []int, m bufMap) error {
	sub.Size = len(members)
	p, err := a.Build(sub)
	if err != nil {
		return fmt.Errorf("rank %d: hier: %s phase: %w", h.req.Rank, a.Name(), err)
	}
	if sc, ok := m[plan.BufScratch]; ok {
		h.b.scratch(sc.Off + p.ScratchLen)
	} else if p.ScratchLen > 0 {
		return fmt.Errorf("rank %d: hier: %s phase needs scratch it was not given", h.req.Rank, a.Name())
	}
	for _, st := range p.Steps {
		ops := make([]*plan.Op, 0, len(st.Ops))
		for _, o := range st.Ops {
			o.Src, o.Dst = m.apply(o.Src), m.apply(o.Dst)
			switch o.Kind {
			case plan.OpSend, plan.OpRecv, plan.OpRecvReduce:
				o.Peer = members[o.Peer]
			}
			ops = append(ops, &o)
		}
		h.b.step(ops...)
	}
	return nil
}

func (h *hier) allReduce() error {
	c, k, l := h.req.Count, h.k, h.l
	ch := func(buf plan.Buf, i int) plan.Region {
		off, n := chunk(c, k, mod(i, k))
		return reg(buf, off, n)
	}
	right, left := h.g*k+mod(l+1, k), h.g*k+mod(l-1, k)
	ringReduceScatterPhase(h.b, k, l, right, left, ch)
	own := ch(plan.BufRecv, l+1)
	sub := plan.Request{Coll: plan.AllReduce, Rank: h.g, Count: own.Len, InPlace: true}
	if err := h.embed(RHD{}, sub, h.column(l), bufMap{
		plan.BufSend: own, plan.BufRecv: own, plan.BufScratch: scratchBuf(0, 0),
	}); err != nil {
		return err
	}
	ringAllGatherPhase(h.b, k, l, right, left, ch)
	return nil
}

// colBlock is where block (server g, local l) sits in the column-major
// scratch: column l holds the s blocks of servers 0..s-1.
func (h *hier) colBlock(g, l int) plan.Region {
	c := h.req.Count
	return scratchBuf((l*h.s+g)*c, c)
}

func (h *hier) allGather() error {
	c, n, s := h.req.Count, h.req.Size, h.s
	column := scratchBuf(h.l*s*c, s*c)
	sub := plan.Request{Coll: plan.AllGather, Rank: h.g, Count: c}
	if err := h.embed(RHD{}, sub, h.column(h.l), bufMap{
		plan.BufSend: sendBuf(0, 0), plan.BufRecv: column, plan.BufScratch: scratchBuf(n*c, 0),
	}); err != nil {
		return err
	}
	sub = plan.Request{Coll: plan.AllGather, Rank: h.l, Count: s * c, InPlace: true}
	if err := h.embed(Ring{}, sub, h.server(), bufMap{
		plan.BufSend: column, plan.BufRecv: scratchBuf(0, 0), plan.BufScratch: scratchBuf(n*c, 0),
	}); err != nil {
		return err
	}
	h.b.scratch(n * c)
	ops := make([]*plan.Op, 0, n)
	for g := 0; g < s; g++ {
		for l := 0; l < h.k; l++ {
			ops = append(ops, copyOp(h.colBlock(g, l), recvBuf((g*h.k+l)*c, c)))
		}
	}
	h.b.step(ops...)
	return nil
}

func (h *hier) reduceScatter() error {
	c, n, s := h.req.Count, h.req.Size, h.s
	h.b.scratch(n * c)
	ops := make([]*plan.Op, 0, n)
	for g := 0; g < s; g++ {
		for l := 0; l < h.k; l++ {
			ops = append(ops, copyOp(sendBuf((g*h.k+l)*c, c), h.colBlock(g, l)))
		}
	}
	h.b.step(ops...)
	column := scratchBuf(h.l*s*c, s*c)
	sub := plan.Request{Coll: plan.ReduceScatter, Rank: h.l, Count: s * c, InPlace: true}
	if err := h.embed(Ring{}, sub, h.server(), bufMap{
		plan.BufSend: scratchBuf(0, 0), plan.BufRecv: column, plan.BufScratch: scratchBuf(n*c, 0),
	}); err != nil {
		return err
	}
	sub = plan.Request{Coll: plan.ReduceScatter, Rank: h.g, Count: c}
	return h.embed(RHD{}, sub, h.column(h.l), bufMap{
		plan.BufSend: column, plan.BufRecv: recvBuf(0, 0), plan.BufScratch: scratchBuf(n*c, 0),
	})
}

func (h *hier) broadcast() error {
	c, root := h.req.Count, h.req.Root
	rg, rl := root/h.k, root%h.k
	if h.l == rl {
		sub := plan.Request{Coll: plan.Broadcast, Rank: h.g, Count: c, Root: rg, InPlace: h.req.InPlace}
		if err := h.embed(Tree{}, sub, h.column(rl), bufMap{
			plan.BufSend: sendBuf(0, 0), plan.BufRecv: recvBuf(0, 0),
		}); err != nil {
			return err
		}
	}
	// The server's source now has the data in its receive buffer.
	sub := plan.Request{Coll: plan.Broadcast, Rank: h.l, Count: c, Root: rl, InPlace: true}
	return h.embed(Tree{}, sub, h.server(), bufMap{
		plan.BufSend: recvBuf(0, 0), plan.BufRecv: recvBuf(0, 0),
	})
}

func (h *hier) reduce() error {
	c, root := h.req.Count, h.req.Root
	rg, rl := root/h.k, root%h.k
	isRoot := h.req.Rank == root
	// The server's partial result: the receive buffer on the root, scratch
	// on the other ranks of its column (they have no receive buffer).
	partial := scratchBuf(0, 0)
	if isRoot {
		partial = recvBuf(0, 0)
	}
	sub := plan.Request{Coll: plan.Reduce, Rank: h.l, Count: c, Root: rl, InPlace: isRoot && h.req.InPlace}
	if err := h.embed(Tree{}, sub, h.server(), bufMap{
		plan.BufSend: sendBuf(0, 0), plan.BufRecv: partial, plan.BufScratch: scratchBuf(c, 0),
	}); err != nil {
		return err
	}
	if h.l != rl {
		return nil
	}
	if !isRoot {
		h.b.scratch(c)
	}
	sub = plan.Request{Coll: plan.Reduce, Rank: h.g, Count: c, Root: rg, InPlace: isRoot}
	return h.embed(Tree{}, sub, h.column(rl), bufMap{
		plan.BufSend: partial, plan.BufRecv: recvBuf(0, 0), plan.BufScratch: scratchBuf(c, 0),
	})
}

package algo

// Hier: hierarchical collectives for jobs on several servers
// (Request.Layout). Rank r is local rank l (its index among its server's
// ranks, which need not be contiguous) of server g. Two designs:
//
// Columns, when every server holds the same number K >= 2 of ranks: the
// "column" of l is the s = n/K ranks of local rank l, one per server.
// Network traffic then only flows within columns: each rank carries 1/K of
// what the busiest rank of a flat ring sends between servers, and the
// cross-server phases take O(log s) latencies instead of O(n).
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
// column by column (column l' holds the blocks of the l'-th ranks of every
// server); (2) ring AllGather of whole columns within the server, in place
// in that scratch; (3) one local step copying every block to its rank's
// place in the receive buffer. ReduceScatter is the mirror: copy the send
// buffer into scratch column by column, ring ReduceScatter of columns
// within the server (in place), RHD ReduceScatter of the own column within
// the column of ranks.
//
// Leaders, when servers differ in size (3+2+1 ranks: columns would not
// line up): each server's lowest rank leads it. AllReduce, servers {0 3 5}
// {1 4} {2}: (1) binomial Reduce within each server to its leader (0, 1,
// 2); (2) RHD AllReduce among the leaders; (3) binomial Broadcast within
// each server from its leader. AllGather: (1) every rank sends its block
// to its leader, which lays its server's blocks out in scratch padded to
// the largest server's K blocks; (2) RHD AllGather of those K-block
// bundles among the leaders; (3) each leader copies the blocks to their
// ranks' places in the receive buffer and broadcasts the whole of it
// (binomial) within its server. ReduceScatter: (1) binomial Reduce of the
// whole send buffer within each server to its leader; (2) the leader lays
// the result out in padded K-block bundles, one per server; (3) RHD
// ReduceScatter of the bundles among the leaders; (4) each leader sends
// every rank of its server its block. The padding (blocks of servers
// smaller than K) carries scratch nobody reads: it costs bytes, not
// correctness, and keeps the leaders' phase one regular collective.
//
// Broadcast, either design: binomial tree among one representative per
// server (the root on its server, the rank of the root's local rank, or
// the last rank of a smaller server, on the others), then a binomial tree
// within each server from its representative. Reduce: the same
// backwards, partial results of the representatives other than the root
// living in scratch.

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
	lay := req.Layout
	if lay.Servers() < 2 || lay.Largest() < 2 {
		return nil, fmt.Errorf("rank %d: hier needs two or more servers, one of two or more ranks (%d ranks on %s): %w",
			req.Rank, req.Size, lay, ErrUnsupported)
	}
	h := hier{req: req, lay: lay, k: lay.Largest(), s: lay.Servers(), g: lay.Server(req.Rank), l: lay.Local(req.Rank), b: newBuilder(req, a.Name())}
	var err error
	switch {
	case req.Coll == plan.Broadcast:
		err = h.broadcast()
	case req.Coll == plan.Reduce:
		err = h.reduce()
	case !lay.Even():
		switch req.Coll {
		case plan.AllReduce:
			err = h.allReduceLeaders()
		case plan.AllGather:
			err = h.allGatherLeaders()
		case plan.ReduceScatter:
			err = h.reduceScatterLeaders()
		}
	case req.Coll == plan.AllReduce:
		err = h.allReduce()
	case req.Coll == plan.AllGather:
		err = h.allGather()
	case req.Coll == plan.ReduceScatter:
		err = h.reduceScatter()
	}
	if err != nil {
		return nil, err
	}
	return h.b.plan(), nil
}

// hier is one rank's build: k is the largest server's ranks (every
// server's in the column design), s the servers, g and l the rank's server
// and local rank.
type hier struct {
	req        plan.Request
	lay        *plan.Layout
	k, s, g, l int
	b          *builder
}

// server lists the ranks of this rank's server, column those of its
// column (of local rank l; column design only).
func (h *hier) server() []int { return h.lay.Members(h.g) }

func (h *hier) column(l int) []int {
	m := make([]int, h.s)
	for j := range m {
		m[j] = h.lay.Members(j)[l]
	}
	return m
}

// leaders lists every server's leader, its lowest rank.
func (h *hier) leaders() []int {
	m := make([]int, h.s)
	for j := range m {
		m[j] = h.lay.Members(j)[0]
	}
	return m
}

// reps lists the servers' representatives for a rooted call: the root on
// its server, the rank of the root's local rank on the others, or their
// last rank when they have fewer.
func (h *hier) reps(root int) []int {
	rl := h.lay.Local(root)
	m := make([]int, h.s)
	for j := range m {
		ms := h.lay.Members(j)
		m[j] = ms[min(rl, len(ms)-1)]
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
	srv := h.server()
	right, left := srv[mod(l+1, k)], srv[mod(l-1, k)]
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
		for l, r := range h.lay.Members(g) {
			ops = append(ops, copyOp(h.colBlock(g, l), recvBuf(r*c, c)))
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
		for l, r := range h.lay.Members(g) {
			ops = append(ops, copyOp(sendBuf(r*c, c), h.colBlock(g, l)))
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

// allReduceLeaders: Reduce to the leader, AllReduce among leaders,
// Broadcast from the leader.
func (h *hier) allReduceLeaders() error {
	c := h.req.Count
	lead := h.l == 0
	// The server's partial result: the receive buffer on the leader,
	// scratch on the others (a non-root Reduce has no receive buffer).
	partial := scratchBuf(0, 0)
	if lead {
		partial = recvBuf(0, 0)
	}
	sub := plan.Request{Coll: plan.Reduce, Rank: h.l, Count: c, Root: 0, InPlace: lead && h.req.InPlace}
	if err := h.embed(Tree{}, sub, h.server(), bufMap{
		plan.BufSend: sendBuf(0, 0), plan.BufRecv: partial, plan.BufScratch: scratchBuf(c, 0),
	}); err != nil {
		return err
	}
	if lead {
		sub = plan.Request{Coll: plan.AllReduce, Rank: h.g, Count: c, InPlace: true}
		if err := h.embed(RHD{}, sub, h.leaders(), bufMap{
			plan.BufSend: recvBuf(0, 0), plan.BufRecv: recvBuf(0, 0), plan.BufScratch: scratchBuf(0, 0),
		}); err != nil {
			return err
		}
	}
	sub = plan.Request{Coll: plan.Broadcast, Rank: h.l, Count: c, Root: 0, InPlace: true}
	return h.embed(Tree{}, sub, h.server(), bufMap{
		plan.BufSend: recvBuf(0, 0), plan.BufRecv: recvBuf(0, 0),
	})
}

// bundle is where block (server g, local l) sits in the leaders' padded
// scratch from base on: server g's k blocks from (g*k)*Count.
func (h *hier) bundle(base, g, l int) plan.Region {
	c := h.req.Count
	return scratchBuf(base+(g*h.k+l)*c, c)
}

// allGatherLeaders: gather to the leader, AllGather of padded bundles
// among leaders, Broadcast of the whole result from the leader.
func (h *hier) allGatherLeaders() error {
	c, n, s, k := h.req.Count, h.req.Size, h.s, h.k
	srv := h.server()
	if h.l != 0 {
		h.b.step(send(srv[0], sendBuf(0, c)))
	} else {
		ops := []*plan.Op{copyOp(sendBuf(0, c), h.bundle(0, h.g, 0))}
		for l, r := range srv[1:] {
			ops = append(ops, recv(r, h.bundle(0, h.g, l+1)))
		}
		h.b.step(ops...)
		h.b.scratch(s * k * c)
		sub := plan.Request{Coll: plan.AllGather, Rank: h.g, Count: k * c, InPlace: true}
		if err := h.embed(RHD{}, sub, h.leaders(), bufMap{
			plan.BufSend: scratchBuf(h.g*k*c, 0), plan.BufRecv: scratchBuf(0, 0), plan.BufScratch: scratchBuf(s*k*c, 0),
		}); err != nil {
			return err
		}
		ops = make([]*plan.Op, 0, n)
		for g := 0; g < s; g++ {
			for l, r := range h.lay.Members(g) {
				ops = append(ops, copyOp(h.bundle(0, g, l), recvBuf(r*c, c)))
			}
		}
		h.b.step(ops...)
	}
	sub := plan.Request{Coll: plan.Broadcast, Rank: h.l, Count: n * c, Root: 0, InPlace: true}
	return h.embed(Tree{}, sub, srv, bufMap{
		plan.BufSend: recvBuf(0, 0), plan.BufRecv: recvBuf(0, 0),
	})
}

// reduceScatterLeaders: Reduce of the whole buffer to the leader,
// ReduceScatter of padded bundles among leaders, each rank's block sent
// from its leader.
func (h *hier) reduceScatterLeaders() error {
	c, n, s, k := h.req.Count, h.req.Size, h.s, h.k
	srv := h.server()
	// Scratch: the server's reduced buffer in rank order, then the padded
	// bundles, then what the phases need of their own.
	base, rest := n*c, n*c+s*k*c
	sub := plan.Request{Coll: plan.Reduce, Rank: h.l, Count: n * c, Root: 0}
	if err := h.embed(Tree{}, sub, srv, bufMap{
		plan.BufSend: sendBuf(0, 0), plan.BufRecv: scratchBuf(0, 0), plan.BufScratch: scratchBuf(rest, 0),
	}); err != nil {
		return err
	}
	if h.l != 0 {
		h.b.step(recv(srv[0], recvBuf(0, c)))
		return nil
	}
	h.b.scratch(rest)
	ops := make([]*plan.Op, 0, n)
	for g := 0; g < s; g++ {
		for l, r := range h.lay.Members(g) {
			ops = append(ops, copyOp(scratchBuf(r*c, c), h.bundle(base, g, l)))
		}
	}
	h.b.step(ops...)
	sub = plan.Request{Coll: plan.ReduceScatter, Rank: h.g, Count: k * c, InPlace: true}
	if err := h.embed(RHD{}, sub, h.leaders(), bufMap{
		plan.BufSend: scratchBuf(base, 0), plan.BufRecv: scratchBuf(base+h.g*k*c, 0), plan.BufScratch: scratchBuf(rest, 0),
	}); err != nil {
		return err
	}
	ops = []*plan.Op{copyOp(h.bundle(base, h.g, 0), recvBuf(0, c))}
	for l, r := range srv[1:] {
		ops = append(ops, send(r, h.bundle(base, h.g, l+1)))
	}
	h.b.step(ops...)
	return nil
}

func (h *hier) broadcast() error {
	c, root := h.req.Count, h.req.Root
	rg := h.lay.Server(root)
	reps := h.reps(root)
	reps[rg] = root
	src := reps[h.g]
	if h.req.Rank == src {
		sub := plan.Request{Coll: plan.Broadcast, Rank: h.g, Count: c, Root: rg, InPlace: h.req.InPlace}
		if err := h.embed(Tree{}, sub, reps, bufMap{
			plan.BufSend: sendBuf(0, 0), plan.BufRecv: recvBuf(0, 0),
		}); err != nil {
			return err
		}
	}
	// The server's source now has the data in its receive buffer.
	sub := plan.Request{Coll: plan.Broadcast, Rank: h.l, Count: c, Root: h.lay.Local(src), InPlace: true}
	return h.embed(Tree{}, sub, h.server(), bufMap{
		plan.BufSend: recvBuf(0, 0), plan.BufRecv: recvBuf(0, 0),
	})
}

func (h *hier) reduce() error {
	c, root := h.req.Count, h.req.Root
	rg := h.lay.Server(root)
	reps := h.reps(root)
	reps[rg] = root
	dst := reps[h.g]
	isRoot := h.req.Rank == root
	// The server's partial result: the receive buffer on the root, scratch
	// on the other representatives (they have no receive buffer).
	partial := scratchBuf(0, 0)
	if isRoot {
		partial = recvBuf(0, 0)
	}
	sub := plan.Request{Coll: plan.Reduce, Rank: h.l, Count: c, Root: h.lay.Local(dst), InPlace: isRoot && h.req.InPlace}
	if err := h.embed(Tree{}, sub, h.server(), bufMap{
		plan.BufSend: sendBuf(0, 0), plan.BufRecv: partial, plan.BufScratch: scratchBuf(c, 0),
	}); err != nil {
		return err
	}
	if h.req.Rank != dst {
		return nil
	}
	if !isRoot {
		h.b.scratch(c)
	}
	sub = plan.Request{Coll: plan.Reduce, Rank: h.g, Count: c, Root: rg, InPlace: isRoot}
	return h.embed(Tree{}, sub, reps, bufMap{
		plan.BufSend: partial, plan.BufRecv: recvBuf(0, 0), plan.BufScratch: scratchBuf(c, 0),
	})
}

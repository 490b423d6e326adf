package algo

// RHD, recursive halving-doubling (Rabenseifner), for AllReduce,
// ReduceScatter and AllGather: log2(p) latencies per phase with the ring's
// bandwidth, the choice for middle sizes.
//
// For p = 4 ranks and chunks a b c d, AllReduce:
//
//	halving (reduce-scatter), partners at distance p/2 first:
//	  round 0: 0<->2, 1<->3: ranks 0,1 keep a b, send c d; ranks 2,3 keep c d, send a b
//	  round 1: 0<->1, 2<->3: rank 0 keeps a, 1 keeps b, 2 keeps c, 3 keeps d
//	doubling (all-gather), the same rounds backwards:
//	  round 2: 0<->1, 2<->3: exchange a/b and c/d, everyone holds two chunks
//	  round 3: 0<->2, 1<->3: exchange the halves, everyone holds all four
//
// In each halving round a rank sends the half of its window its partner
// keeps and reduces the half it keeps (RecvReduce); each chunk is reduced on
// exactly one rank and then copied, so results are identical everywhere.
//
// A rank count that is not a power of two folds first: with
// p = 2^floor(log2 n) and r = n-p, ranks 0..2r-1 pair up, each even rank
// hands its whole input to the odd one above it and waits; the odd ranks and
// ranks 2r..n-1 form p virtual ranks (odd rank 2v+1 is virtual v < r, rank
// v+r is virtual v >= r) that run the power-of-two schedule; then every odd
// rank hands the result back to its even partner. 5 ranks, AllReduce:
// 0 -> 1 (fold), virtual ranks 1,2,3,4 halve and double, 1 -> 0 (unfold).
//
// ReduceScatter and AllGather use the same rounds with windows measured in
// virtual ranks, where virtual v stands for the blocks of the real ranks it
// represents (two blocks for v < r, one otherwise: contiguous and in
// order). ReduceScatter accumulates in scratch (n blocks) and ends each
// rank's block in its receive buffer, odd folded ranks passing the even
// partner its block; AllGather gathers in the receive buffer, odd folded
// ranks receiving the even partner's block first and sending it everything
// at the end.

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// RHD builds recursive halving-doubling plans.
type RHD struct{}

// Name implements plan.Algorithm.
func (RHD) Name() string { return "rhd" }

// Colls implements Collectives.
func (RHD) Colls() []plan.Coll {
	return []plan.Coll{plan.AllReduce, plan.ReduceScatter, plan.AllGather}
}

// Build implements plan.Algorithm.
func (a RHD) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	b := newBuilder(req, a.Name())
	if req.Size == 1 {
		localCopy(b, req, req.Count)
		return b.plan(), nil
	}
	f := newFold(req.Size, req.Rank)
	switch req.Coll {
	case plan.AllReduce:
		rhdAllReduce(b, req, f)
	case plan.ReduceScatter:
		rhdReduceScatter(b, req, f)
	case plan.AllGather:
		rhdAllGather(b, req, f)
	default:
		return nil, fmt.Errorf("rank %d: rhd: %s: %w", req.Rank, req.Coll, ErrUnsupported)
	}
	return b.plan(), nil
}

// fold maps n real ranks onto p = 2^floor(log2 n) virtual ones.
type fold struct {
	n, p, extra int
	v           int // this rank's virtual rank, -1 for an even folded rank
	odd         bool
}

func newFold(n, rank int) fold {
	p := 1
	for p*2 <= n {
		p *= 2
	}
	f := fold{n: n, p: p, extra: n - p}
	switch {
	case rank < 2*f.extra && rank%2 == 0:
		f.v = -1
	case rank < 2*f.extra:
		f.v, f.odd = rank/2, true
	default:
		f.v = rank - f.extra
	}
	return f
}

// real is the real rank of virtual rank v.
func (f fold) real(v int) int {
	if v < f.extra {
		return 2*v + 1
	}
	return v + f.extra
}

// blocks is the range of real ranks virtual ranks [vlo, vhi) stand for.
func (f fold) blocks(vlo, vhi int) (lo, hi int) {
	lo = vlo + min(vlo, f.extra)
	hi = vhi + min(vhi, f.extra)
	return lo, hi
}

// round is one exchange of the halving or doubling phase.
type round struct {
	peer             int // real rank
	keepLo, keepHi   int // virtual window kept (halving) or held (doubling)
	otherLo, otherHi int // virtual window sent (halving) or received (doubling)
}

// halving lists the rounds of recursive halving for virtual rank v: the
// window shrinks from [0,p) to [v,v+1).
func (f fold) halving() []round {
	var rs []round
	lo, hi := 0, f.p
	for mask := f.p / 2; mask >= 1; mask /= 2 {
		mid := lo + mask
		rd := round{peer: f.real(f.v ^ mask)}
		if f.v&mask == 0 {
			rd.keepLo, rd.keepHi, rd.otherLo, rd.otherHi = lo, mid, mid, hi
			hi = mid
		} else {
			rd.keepLo, rd.keepHi, rd.otherLo, rd.otherHi = mid, hi, lo, mid
			lo = mid
		}
		rs = append(rs, rd)
	}
	return rs
}

// doubling lists the rounds of recursive doubling: the window grows from
// [v,v+1) to [0,p).
func (f fold) doubling() []round {
	var rs []round
	lo, hi := f.v, f.v+1
	for mask := 1; mask < f.p; mask *= 2 {
		rd := round{peer: f.real(f.v ^ mask), keepLo: lo, keepHi: hi}
		if f.v&mask == 0 {
			rd.otherLo, rd.otherHi = hi, hi+mask
			hi += mask
		} else {
			rd.otherLo, rd.otherHi = lo-mask, lo
			lo -= mask
		}
		rs = append(rs, rd)
	}
	return rs
}

func rhdAllReduce(b *builder, req plan.Request, f fold) {
	c, r := req.Count, req.Rank
	all := func(buf plan.Buf) plan.Region { return reg(buf, 0, c) }
	if f.v < 0 {
		b.step(send(r+1, all(plan.BufSend)))
		b.step(recv(r+1, all(plan.BufRecv)))
		return
	}
	// span is the elements of virtual chunks [lo, hi).
	span := func(buf plan.Buf, lo, hi int) plan.Region {
		off, _ := chunk(c, f.p, lo)
		end, l := chunk(c, f.p, hi-1)
		return reg(buf, off, end+l-off)
	}
	have := plan.BufSend // where this rank's partial sums are
	if f.odd {
		b.step(recvReduce(r-1, all(plan.BufSend), all(plan.BufRecv)))
		have = plan.BufRecv
	}
	for _, rd := range f.halving() {
		b.step(send(rd.peer, span(have, rd.otherLo, rd.otherHi)),
			recvReduce(rd.peer, span(have, rd.keepLo, rd.keepHi), span(plan.BufRecv, rd.keepLo, rd.keepHi)))
		have = plan.BufRecv
	}
	for _, rd := range f.doubling() {
		b.step(send(rd.peer, span(plan.BufRecv, rd.keepLo, rd.keepHi)),
			recv(rd.peer, span(plan.BufRecv, rd.otherLo, rd.otherHi)))
	}
	if f.odd {
		b.step(send(r-1, all(plan.BufRecv)))
	}
}

func rhdReduceScatter(b *builder, req plan.Request, f fold) {
	c, r, n := req.Count, req.Rank, req.Size
	if f.v < 0 {
		b.step(send(r+1, sendBuf(0, n*c)))
		b.step(recv(r+1, recvBuf(0, c)))
		return
	}
	span := func(buf plan.Buf, vlo, vhi int) plan.Region {
		lo, hi := f.blocks(vlo, vhi)
		return reg(buf, lo*c, (hi-lo)*c)
	}
	b.scratch(n * c)
	have := plan.BufSend
	if f.odd {
		b.step(recvReduce(r-1, sendBuf(0, n*c), scratchBuf(0, n*c)))
		have = plan.BufScratch
	}
	rounds := f.halving()
	for k, rd := range rounds {
		dst := span(plan.BufScratch, rd.keepLo, rd.keepHi)
		if k == len(rounds)-1 && !f.odd {
			dst = recvBuf(0, c) // the kept window is this rank's block
		}
		b.step(send(rd.peer, span(have, rd.otherLo, rd.otherHi)),
			recvReduce(rd.peer, span(have, rd.keepLo, rd.keepHi), dst))
		have = plan.BufScratch
	}
	if f.odd {
		b.step(copyOp(scratchBuf(r*c, c), recvBuf(0, c)), send(r-1, scratchBuf((r-1)*c, c)))
	}
}

func rhdAllGather(b *builder, req plan.Request, f fold) {
	c, r, n := req.Count, req.Rank, req.Size
	var own *plan.Op
	if !req.InPlace {
		own = copyOp(sendBuf(0, c), recvBuf(r*c, c))
	}
	if f.v < 0 {
		b.step(send(r+1, sendBuf(0, c)))
		b.step(recv(r+1, recvBuf(0, n*c)))
		return
	}
	span := func(vlo, vhi int) plan.Region {
		lo, hi := f.blocks(vlo, vhi)
		return recvBuf(lo*c, (hi-lo)*c)
	}
	if f.odd {
		b.step(own, recv(r-1, recvBuf((r-1)*c, c)))
		own = nil
	}
	for k, rd := range f.doubling() {
		src := span(rd.keepLo, rd.keepHi)
		if k == 0 && !f.odd {
			src = sendBuf(0, c) // the rank's own block, being copied concurrently
		}
		b.step(own, send(rd.peer, src), recv(rd.peer, span(rd.otherLo, rd.otherHi)))
		own = nil
	}
	if f.odd {
		b.step(send(r-1, recvBuf(0, n*c)))
	}
}

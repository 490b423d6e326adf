package algo

import "github.com/hcclrun/hcclrun/runtime/plan"

// builder accumulates a plan step by step. Empty steps are dropped, which
// lets the algorithms index steps by a global clock and leave out the
// transfers of empty chunks without renumbering anything.
type builder struct {
	p *plan.Plan
}

func newBuilder(req plan.Request, name string) *builder {
	return &builder{p: &plan.Plan{Coll: req.Coll, Algo: name, Rank: req.Rank, Size: req.Size}}
}

// step appends one step made of ops; nil entries are skipped, so callers
// can pass optional ops.
func (b *builder) step(ops ...*plan.Op) {
	var st plan.Step
	for _, o := range ops {
		if o != nil {
			st.Ops = append(st.Ops, *o)
		}
	}
	if len(st.Ops) > 0 {
		b.p.Steps = append(b.p.Steps, st)
	}
}

// scratch makes sure the plan has at least n scratch elements.
func (b *builder) scratch(n int) {
	b.p.ScratchLen = max(b.p.ScratchLen, n)
}

func (b *builder) plan() *plan.Plan { return b.p }

func reg(buf plan.Buf, off, n int) plan.Region {
	return plan.Region{Buf: buf, Off: off, Len: n}
}

func sendBuf(off, n int) plan.Region    { return reg(plan.BufSend, off, n) }
func recvBuf(off, n int) plan.Region    { return reg(plan.BufRecv, off, n) }
func scratchBuf(off, n int) plan.Region { return reg(plan.BufScratch, off, n) }

// The op constructors return nil for data-less ops so that empty chunks
// vanish from plans; the *0 variants keep 0-length transfers.

func send(peer int, src plan.Region) *plan.Op {
	if src.Len == 0 {
		return nil
	}
	return send0(peer, src)
}

func send0(peer int, src plan.Region) *plan.Op {
	if src.Len == 0 {
		src = plan.Region{}
	}
	return &plan.Op{Kind: plan.OpSend, Peer: peer, Src: src}
}

func recv(peer int, dst plan.Region) *plan.Op {
	if dst.Len == 0 {
		return nil
	}
	return recv0(peer, dst)
}

func recv0(peer int, dst plan.Region) *plan.Op {
	if dst.Len == 0 {
		dst = plan.Region{}
	}
	return &plan.Op{Kind: plan.OpRecv, Peer: peer, Dst: dst}
}

// recvReduce receives from peer and stores src op incoming into dst.
func recvReduce(peer int, src, dst plan.Region) *plan.Op {
	if dst.Len == 0 {
		return nil
	}
	return &plan.Op{Kind: plan.OpRecvReduce, Peer: peer, Src: src, Dst: dst}
}

// recvReducePeerFirst receives from peer and stores incoming op src into
// dst.
func recvReducePeerFirst(peer int, src, dst plan.Region) *plan.Op {
	o := recvReduce(peer, src, dst)
	if o != nil {
		o.PeerFirst = true
	}
	return o
}

func copyOp(src, dst plan.Region) *plan.Op {
	if dst.Len == 0 || src == dst {
		return nil
	}
	return &plan.Op{Kind: plan.OpCopy, Src: src, Dst: dst}
}

// reduceOp stores dst op src into dst.
func reduceOp(dst, src plan.Region) *plan.Op {
	if dst.Len == 0 {
		return nil
	}
	return &plan.Op{Kind: plan.OpReduce, Src: src, Dst: dst}
}

// mod is the non-negative remainder, for rank arithmetic on a ring.
func mod(a, n int) int {
	a %= n
	if a < 0 {
		a += n
	}
	return a
}

// chunk returns the offset and length of chunk i when count elements are
// split into n chunks as equal as possible, the longer ones first.
func chunk(count, n, i int) (off, length int) {
	q, r := count/n, count%n
	off = i*q + min(i, r)
	length = q
	if i < r {
		length++
	}
	return off, length
}

// ceilLog2 is the number of doubling rounds that reach n ranks.
func ceilLog2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}

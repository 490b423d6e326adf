package runtime

import (
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Compile's two rewrites of a graph, in this order:
//
//   - a ReduceScatter followed by an AllGather of its result (a sharded
//     optimizer's step) becomes one AllReduce, plus a copy of this
//     rank's block of the result into the ReduceScatter's recv, where
//     every rank's buffers allow it and the selector prices the
//     AllReduce below the two;
//   - runs of adjacent AllReduces of one dtype and op under fuseMax, none
//     reading what an earlier one of the run writes, become one in-place
//     AllReduce over a staging buffer, up to the fusion cap, where the
//     selector prices that and the copies below the calls: all but one
//     round of latency saved for the small ones.

// graphNode is a collective of a graph being compiled: a recorded call,
// or the AllReduce that stands for a merged pair, with the copy that
// fills the ReduceScatter's recv after it.
type graphNode struct {
	a     call
	block []blockCopy
}

// blockCopy is a copy made after a step.
type blockCopy struct{ dst, src []byte }

// How a rank may merge a ReduceScatter and AllGather pair
// (agreeMerges): every rank must merge alike, and into the same kind of
// AllReduce.
const (
	mergeNo uint8 = iota
	mergeOutOfPlace
	mergeInPlace
)

// scatterGatherPairs returns the nodes i whose node i+1 is an AllGather
// of node i's ReduceScatter's count and dtype, from the descriptors
// alone, which every rank has agreed on: the candidates for a merge.
func scatterGatherPairs(nodes []call) []int {
	var pairs []int
	for i := 0; i+1 < len(nodes); i++ {
		rs, ag := &nodes[i], &nodes[i+1]
		if rs.req.Coll == plan.ReduceScatter && ag.req.Coll == plan.AllGather &&
			rs.dtype == ag.dtype && rs.req.Count == ag.req.Count && rs.req.Count > 0 {
			pairs = append(pairs, i)
			i++ // an AllGather ends its pair
		}
	}
	return pairs
}

// mergeable says whether this rank's ReduceScatter rs and AllGather ag,
// a candidate pair, are an AllReduce of rs's send into ag's recv: ag
// gathers exactly rs's recv, and the AllReduce's two buffers are one or
// apart.
func mergeable(rs, ag *call) uint8 {
	if !sameBytes(rs.recv, ag.send) {
		return mergeNo
	}
	switch {
	case sameBytes(rs.send, ag.recv):
		return mergeInPlace
	case overlap(rs.send, ag.recv):
		return mergeNo
	}
	return mergeOutOfPlace
}

func sameBytes(a, b []byte) bool { return len(a) == len(b) && sameStart(a, b) }

// mergeScatterGathers returns the graph's nodes with every agreed pair
// that the selector prices cheaper as an AllReduce made one, and how
// many were; under c.mu.
func (c *Comm) mergeScatterGathers(nodes []call, pairs []int, agreed []bool) ([]graphNode, int) {
	starts := make([]bool, len(nodes)) // of agreed pairs
	for k, i := range pairs {
		starts[i] = agreed[k]
	}
	out := make([]graphNode, 0, len(nodes))
	merged := 0
	for i := 0; i < len(nodes); i++ {
		if starts[i] {
			rs, ag := &nodes[i], &nodes[i+1]
			if ar, ok := c.scatterGatherAsAllReduce(rs, ag); ok {
				out = append(out, ar)
				merged++
				i++
				continue
			}
		}
		out = append(out, graphNode{a: nodes[i]})
	}
	return out, merged
}

// scatterGatherAsAllReduce returns the AllReduce that does what rs and
// then ag do, when the selector prices it below the two.
func (c *Comm) scatterGatherAsAllReduce(rs, ag *call) (graphNode, bool) {
	size := rs.dtype.Size()
	r := graphNode{a: call{
		req:   plan.Request{Coll: plan.AllReduce, Count: len(rs.send) / size, InPlace: sameBytes(rs.send, ag.recv)},
		dtype: rs.dtype, op: rs.op, reduces: true,
		send: rs.send, recv: ag.recv, avgSlice: ag.recv,
	}}
	if mine := ag.recv[c.job.Rank*len(rs.recv):][:len(rs.recv)]; !sameBytes(mine, rs.recv) {
		r.block = []blockCopy{{dst: rs.recv, src: mine}}
	}
	arCost, ok1 := c.predicted(&r.a)
	rsCost, ok2 := c.predicted(rs)
	agCost, ok3 := c.predicted(ag)
	return r, ok1 && ok2 && ok3 && arCost < rsCost+agCost
}

// predicted is the selector's price of call a, false when it has none;
// under c.mu. The price depends only on what the ranks agreed on, so
// every rank rewrites alike.
func (c *Comm) predicted(a *call) (time.Duration, bool) {
	req := a.req
	req.Rank, req.Size = c.job.Rank, c.job.Size
	choice, err := c.chooseAlgorithm(&req, a.dtype.Size())
	return choice.Predicted, err == nil
}

// bucketPays says whether one AllReduce over a staging buffer of bytes,
// with the copies into it and out of it, is priced below the group's
// calls one by one: not at one rank, whose in-place calls are free, nor
// where the calls are few and large.
func (c *Comm) bucketPays(group []graphNode, bytes int) bool {
	var calls time.Duration
	for i := range group {
		t, ok := c.predicted(&group[i].a)
		if !ok {
			return false
		}
		calls += t
	}
	first := &group[0].a
	fused := call{req: plan.Request{Coll: plan.AllReduce, Count: bytes / first.dtype.Size(), InPlace: true},
		dtype: first.dtype, op: first.op, reduces: true}
	t, ok := c.predicted(&fused)
	return ok && t+c.sel.CopyTime(2*bytes) < calls
}

// fuseMax is the largest AllReduce a graph packs into a bucket: from 256
// KiB the shm links read payloads in place from the caller's buffer
// (tunables.ShmDirect), which a copy through staging would give up, and
// a call that size pays its latency only a few times over per byte
// (docs/performance.md#graph-mode).
const fuseMax = 256 << 10

func nodeBytes(a *call) int { return a.req.Count * a.dtype.Size() }

func fusible(a *call) bool { return a.req.Coll == plan.AllReduce && nodeBytes(a) < fuseMax }

func sameKind(a, b *call) bool { return a.dtype == b.dtype && a.op == b.op }

// readsWritten says whether n reads memory that a node of run writes: a
// bucket copies every input in before any result comes out, so n must
// not join run then (agreeBreaks). A node writing what an earlier one
// reads, or what it writes too, may: the copies out go in order.
func readsWritten(n *graphNode, run []graphNode) bool {
	for i := range run {
		if overlap(n.a.send, run[i].a.recv) {
			return true
		}
		for _, b := range run[i].block {
			if overlap(n.a.send, b.dst) {
				return true
			}
		}
	}
	return false
}

// bucket packs runs of fusible AllReduces of one kind, up to capBytes
// (negative: none) and ending before each node breaks marks
// (agreeBreaks), into steps over one staging buffer where that pays
// (bucketPays), which serves every bucket: they run one after another.
// Under c.mu.
func (c *Comm) bucket(nodes []graphNode, capBytes int, breaks []bool) *Executable {
	e := &Executable{c: c}
	type span struct{ lo, hi, bytes int }
	var spans []span
	total := 0
	for i := 0; i < len(nodes); {
		j, bytes := i+1, nodeBytes(&nodes[i].a)
		if capBytes > 0 && fusible(&nodes[i].a) && bytes < capBytes {
			for j < len(nodes) && fusible(&nodes[j].a) && sameKind(&nodes[i].a, &nodes[j].a) &&
				bytes+nodeBytes(&nodes[j].a) <= capBytes && (breaks == nil || !breaks[j]) {
				bytes += nodeBytes(&nodes[j].a)
				j++
			}
		}
		if j-i == 1 || !c.bucketPays(nodes[i:j], bytes) {
			bytes = -1
		}
		spans = append(spans, span{i, j, bytes})
		total = max(total, bytes)
		i = j
	}
	// Touched once here so that the first replay does not pay for the
	// pages.
	e.staging = make([]byte, total)
	for i := 0; i < len(e.staging); i += 4096 {
		e.staging[i] = 0
	}
	for _, s := range spans {
		if s.bytes < 0 {
			for k := s.lo; k < s.hi; k++ {
				e.steps = append(e.steps, graphStep{a: nodes[k].a, block: nodes[k].block})
			}
			continue
		}
		first := &nodes[s.lo].a
		st := graphStep{a: call{
			req:   plan.Request{Coll: plan.AllReduce, Count: s.bytes / first.dtype.Size(), InPlace: true},
			dtype: first.dtype, op: first.op, reduces: true,
			send: e.staging[:s.bytes], recv: e.staging[:s.bytes], avgSlice: e.staging[:s.bytes],
		}}
		off := 0
		for k := s.lo; k < s.hi; k++ {
			n := &nodes[k]
			st.parts = append(st.parts, fusedPart{send: n.a.send, recv: n.a.recv, off: off})
			st.block = append(st.block, n.block...)
			off += len(n.a.send)
		}
		e.groups = append(e.groups, s.hi-s.lo)
		e.steps = append(e.steps, st)
	}
	return e
}

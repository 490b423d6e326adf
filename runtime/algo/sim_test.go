package algo

import (
	"fmt"
	"slices"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// A simCase is one cell of the simulator matrix: an algorithm, a call and the
// reduction. run builds every rank's plan, lays the buffers out in simulated
// memory (aliased for in-place calls, absent where the collective says a rank
// has no buffer), runs plan.Simulate and compares every rank's result with a
// naive reference computed element by element.
type simCase struct {
	alg     plan.Algorithm
	coll    plan.Coll
	n       int
	count   int
	root    int
	inPlace bool
	// op is "sum", "max", or "ordered": a reduction neither commutative
	// nor associative, for which run checks only that every rank of an
	// AllReduce gets the same result, that is reduces in the same order.
	op string
	// servers is Request.Layout, for the hierarchical algorithms.
	servers *plan.Layout
	// scratchLimit is Request.ScratchLimit; run checks that plans keep it.
	scratchLimit int
}

func (c simCase) String() string {
	ip := "out-of-place"
	if c.inPlace {
		ip = "in-place"
	}
	return fmt.Sprintf("%s/%s n=%d (servers %s) count=%d root=%d scratch limit %d %s %s", c.alg.Name(), c.coll, c.n, c.servers, c.count, c.root, c.scratchLimit, ip, c.op)
}

func (c simCase) reduce() plan.ReduceFunc {
	switch c.op {
	case "max":
		return func(a, b int64) int64 { return max(a, b) }
	case "ordered":
		return func(a, b int64) int64 { return 3*a + b }
	}
	return func(a, b int64) int64 { return a + b }
}

// value is rank r's input element i: small, signed, varied, so that sums
// stay exact and maxima depend on every rank.
func value(r, i int) int64 {
	return int64((r*7919+i*104729+r*i*13)%2001) - 1000
}

const recvPoison = -1 << 40

// a2avCount is how many elements rank p sends rank q in AlltoAllV cases:
// between 0 and count, zeros included.
func a2avCount(count, p, q int) int {
	return (p*7 + q*3 + count) % (count + 1)
}

// a2avLayout gives rank r's AlltoAllV counts and displacements. Send blocks
// are laid out in reverse peer order and receive blocks in peer order, both
// with gaps, so that displacements matter.
func a2avLayout(n, count, r int) (sc, sd, rc, rd []int, sendLen, recvLen int) {
	sc, sd, rc, rd = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	for q := n - 1; q >= 0; q-- {
		sc[q] = a2avCount(count, r, q)
		sd[q] = sendLen
		sendLen += sc[q] + 1
	}
	for p := 0; p < n; p++ {
		rc[p] = a2avCount(count, p, r)
		rd[p] = recvLen
		recvLen += rc[p] + p%2
	}
	return sc, sd, rc, rd, sendLen, recvLen
}

func (c simCase) request(r int) plan.Request {
	req := plan.Request{Coll: c.coll, Rank: r, Size: c.n, Count: c.count, InPlace: c.inPlace, Layout: c.servers, ScratchLimit: c.scratchLimit}
	switch c.coll {
	case plan.Broadcast, plan.Reduce:
		req.Root = c.root
	case plan.AlltoAllV:
		req.Count = 0
		req.SendCounts, req.SendDispls, req.RecvCounts, req.RecvDispls, _, _ = a2avLayout(c.n, c.count, r)
	case plan.Barrier:
		req.Count = 0
	}
	return req
}

// layout builds rank r's memory: the input in the send window, poison
// elsewhere.
func (c simCase) layout(r int) plan.SimRank {
	n, k := c.n, c.count
	var sendLen, recvLen int
	switch c.coll {
	case plan.AllReduce, plan.Broadcast, plan.Reduce:
		sendLen, recvLen = k, k
	case plan.AllGather:
		sendLen, recvLen = k, n*k
	case plan.ReduceScatter:
		sendLen, recvLen = n*k, k
	case plan.AlltoAll:
		sendLen, recvLen = n*k, n*k
	case plan.AlltoAllV:
		_, _, _, _, sendLen, recvLen = a2avLayout(n, k, r)
	}
	var sr plan.SimRank
	if c.inPlace {
		big := max(sendLen, recvLen)
		sr.Mem = make([]int64, big)
		sr.Send = plan.Window{Len: sendLen}
		sr.Recv = plan.Window{Len: recvLen}
		switch {
		case c.coll == plan.AllGather:
			sr.Send.Off = r * k
		case c.coll == plan.ReduceScatter:
			sr.Recv.Off = r * k
		case c.coll == plan.Reduce && r != c.root:
			sr.Recv = plan.Window{Absent: true}
		}
	} else {
		sr.Mem = make([]int64, sendLen+recvLen)
		sr.Send = plan.Window{Len: sendLen}
		sr.Recv = plan.Window{Off: sendLen, Len: recvLen}
		switch {
		case c.coll == plan.Broadcast && r != c.root:
			sr.Send = plan.Window{Absent: true}
		case c.coll == plan.Reduce && r != c.root:
			sr.Recv = plan.Window{Absent: true}
		}
	}
	for i := range sr.Mem {
		sr.Mem[i] = recvPoison - int64(i)
	}
	if !sr.Send.Absent {
		for i := 0; i < sr.Send.Len; i++ {
			sr.Mem[sr.Send.Off+i] = value(r, i)
		}
	}
	return sr
}

func window(sr plan.SimRank, w plan.Window) []int64 {
	if w.Absent {
		return nil
	}
	return sr.Mem[w.Off : w.Off+w.Len]
}

// expected returns what rank r's receive window must hold.
func (c simCase) expected(r int, inputs [][]int64) []int64 {
	n, k := c.n, c.count
	f := c.reduce()
	fold := func(idx func(p int) int) int64 {
		acc := inputs[0][idx(0)]
		for p := 1; p < n; p++ {
			acc = f(acc, inputs[p][idx(p)])
		}
		return acc
	}
	var out []int64
	switch c.coll {
	case plan.AllReduce:
		for i := 0; i < k; i++ {
			out = append(out, fold(func(int) int { return i }))
		}
	case plan.Reduce:
		if r != c.root {
			return nil
		}
		for i := 0; i < k; i++ {
			out = append(out, fold(func(int) int { return i }))
		}
	case plan.Broadcast:
		out = slices.Clone(inputs[c.root])
	case plan.AllGather:
		for p := 0; p < n; p++ {
			out = append(out, inputs[p]...)
		}
	case plan.ReduceScatter:
		for i := 0; i < k; i++ {
			out = append(out, fold(func(int) int { return r*k + i }))
		}
	case plan.AlltoAll:
		for p := 0; p < n; p++ {
			out = append(out, inputs[p][r*k:(r+1)*k]...)
		}
	case plan.AlltoAllV:
		_, _, rc, rd, _, recvLen := a2avLayout(n, k, r)
		out = make([]int64, recvLen)
		sr := c.layout(r) // poison in the gaps, as run leaves it
		copy(out, window(sr, sr.Recv))
		for p := 0; p < n; p++ {
			_, sd, _, _, _, _ := a2avLayout(n, k, p)
			copy(out[rd[p]:rd[p]+rc[p]], inputs[p][sd[r]:sd[r]+rc[p]])
		}
	}
	return out
}

// run simulates the case and returns the first discrepancy.
func (c simCase) run() (*plan.SimResult, error) {
	plans := make([]*plan.Plan, c.n)
	ranks := make([]plan.SimRank, c.n)
	inputs := make([][]int64, c.n)
	for r := 0; r < c.n; r++ {
		p, err := c.alg.Build(c.request(r))
		if err != nil {
			return nil, fmt.Errorf("build rank %d: %w", r, err)
		}
		if c.scratchLimit > 0 && p.ScratchLen > c.scratchLimit {
			return nil, fmt.Errorf("rank %d: scratch %d beyond the limit %d", r, p.ScratchLen, c.scratchLimit)
		}
		plans[r] = p
		ranks[r] = c.layout(r)
		inputs[r] = slices.Clone(window(ranks[r], ranks[r].Send))
		if c.coll == plan.Broadcast && c.inPlace && r != c.root {
			inputs[r] = nil // a non-root's buffer is output only
		}
	}
	res, err := plan.Simulate(plans, ranks, c.reduce())
	if err != nil {
		return nil, err
	}
	if c.op == "ordered" {
		for r := 1; r < c.n; r++ {
			if got, want := window(ranks[r], ranks[r].Recv), window(ranks[0], ranks[0].Recv); !slices.Equal(got, want) {
				return nil, fmt.Errorf("rank %d reduced in another order than rank 0: %v, rank 0 %v", r, head(got, 0), head(want, 0))
			}
		}
		return res, nil
	}
	for r := 0; r < c.n; r++ {
		want := c.expected(r, inputs)
		got := window(ranks[r], ranks[r].Recv)
		if c.coll == plan.Barrier {
			if res.Informed[r] != c.n {
				return nil, fmt.Errorf("rank %d left the barrier having heard from %d of %d ranks", r, res.Informed[r], c.n)
			}
			continue
		}
		if !slices.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			return nil, fmt.Errorf("rank %d: result differs from element %d of %d/%d: got %v want %v", r, i, len(got), len(want), head(got, i), head(want, i))
		}
		outOfPlace := !c.inPlace || c.coll == plan.Reduce && r != c.root
		if outOfPlace && !ranks[r].Send.Absent && !slices.Equal(window(ranks[r], ranks[r].Send), inputs[r]) {
			return nil, fmt.Errorf("rank %d: the plan wrote into the send buffer", r)
		}
	}
	return res, nil
}

func head(s []int64, from int) []int64 {
	if from >= len(s) {
		return nil
	}
	return s[from:min(len(s), from+4)]
}

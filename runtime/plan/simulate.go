package plan

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// The faults Simulate reports; its errors wrap one of these so that tests can
// tell a deadlock from a bad region.
var (
	ErrMalformed = errors.New("malformed plan")
	ErrBounds    = errors.New("region out of bounds")
	ErrConflict  = errors.New("conflicting ops in a step")
	ErrLength    = errors.New("transfer length mismatch")
	ErrDeadlock  = errors.New("deadlock")
)

// Window locates one caller buffer inside a simulated rank's memory. The send
// and receive windows of a rank may overlap: that is how in-place calls are
// simulated, so that reads of BufSend see earlier writes to BufRecv exactly
// as they would in the caller's memory.
type Window struct {
	Off, Len int
	// Absent marks a buffer the rank does not have (the receive buffer of a
	// non-root Reduce): any region naming it is an error.
	Absent bool
}

// SimRank is one rank's memory for Simulate. Mem holds the caller's buffers,
// Send and Recv say where. Simulate allocates Scratch (Plan.ScratchLen
// elements filled with poison, so that a plan reading scratch it never wrote
// produces wrong results) and leaves it there for inspection.
type SimRank struct {
	Mem     []int64
	Send    Window
	Recv    Window
	Scratch []int64
}

// ReduceFunc combines two elements. RecvReduce stores f(src, incoming)
// (f(incoming, src) with PeerFirst) and
// Reduce stores f(dst, src), so a non-commutative f shows argument order.
type ReduceFunc func(a, b int64) int64

// SimResult summarises a successful simulation.
type SimResult struct {
	Transfers int     // matched send/receive pairs, 0-length ones included
	Elems     int64   // elements moved over the network, all ranks together
	SentElems []int64 // per rank, elements it sent
	Steps     []int   // per rank, the length of its plan
	// Rounds is the longest chain of transfers that wait for each other: the
	// number of network latencies the plan costs when bandwidth is free.
	Rounds int
	// Informed is, per rank, how many ranks' starts causally precede the
	// rank's end (through receives). A barrier needs Size on every rank.
	Informed []int
}

// DeadlockError reports the ranks that wait forever and what they wait for.
type DeadlockError struct {
	Stuck []StuckRank
}

// StuckRank is one rank of a deadlock: the step it cannot finish and the
// transfers of that step that found no partner.
type StuckRank struct {
	Rank, Step int
	Ops        []Op
}

func (e *DeadlockError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deadlock: %d ranks stuck", len(e.Stuck))
	for i, s := range e.Stuck {
		if i == 8 {
			fmt.Fprintf(&b, "; ... %d more", len(e.Stuck)-i)
			break
		}
		ops := make([]string, len(s.Ops))
		for k, o := range s.Ops {
			ops[k] = o.String()
		}
		fmt.Fprintf(&b, "; rank %d step %d waits on [%s]", s.Rank, s.Step, strings.Join(ops, ", "))
	}
	return b.String()
}

func (e *DeadlockError) Unwrap() error { return ErrDeadlock }

// Simulate runs plans[i] as rank i over an in-memory network, one goroutine,
// deterministic. A transfer happens when the sender and the receiver are both
// in the steps holding the matching ops (rendezvous: no plan may rely on a
// send completing before its receive is posted, because the executor's
// buffers are bounded). Transfers between two ranks match in order per
// directed pair, and a step ends when all its ops have run.
//
// Before running, every plan is checked: ranks and sizes agree, regions lie
// inside their buffers (ranks[i] gives the lengths), ops are well formed and
// the step constraints of Step hold, evaluated on real memory so that
// aliasing in-place buffers count as the same memory.
//
// Simulate mutates ranks[i].Mem and sets ranks[i].Scratch.
func Simulate(plans []*Plan, ranks []SimRank, f ReduceFunc) (*SimResult, error) {
	n := len(plans)
	if len(ranks) != n {
		return nil, fmt.Errorf("%w: %d plans but %d ranks", ErrMalformed, n, len(ranks))
	}
	for i, p := range plans {
		if p == nil {
			return nil, fmt.Errorf("%w: rank %d has no plan", ErrMalformed, i)
		}
		if p.Rank != i || p.Size != n {
			return nil, fmt.Errorf("%w: plan %d says rank %d of %d, want %d of %d", ErrMalformed, i, p.Rank, p.Size, i, n)
		}
		if p.Coll != plans[0].Coll {
			return nil, fmt.Errorf("%w: rank %d runs %s, rank 0 runs %s", ErrMalformed, i, p.Coll, plans[0].Coll)
		}
		if p.ScratchLen < 0 {
			return nil, fmt.Errorf("%w: rank %d: negative scratch %d", ErrMalformed, i, p.ScratchLen)
		}
		r := &ranks[i]
		for _, w := range []Window{r.Send, r.Recv} {
			if !w.Absent && (w.Off < 0 || w.Len < 0 || w.Off+w.Len > len(r.Mem)) {
				return nil, fmt.Errorf("%w: rank %d: window [%d:%d] outside memory of %d", ErrMalformed, i, w.Off, w.Off+w.Len, len(r.Mem))
			}
		}
		r.Scratch = make([]int64, p.ScratchLen)
		for k := range r.Scratch {
			r.Scratch[k] = scratchPoison + int64(k)
		}
	}
	s := &sim{plans: plans, ranks: ranks, f: f}
	for i := range plans {
		if err := s.check(i); err != nil {
			return nil, err
		}
	}
	return s.run()
}

// scratchPoison fills fresh scratch: large enough that any sum or maximum
// that picks it up is visibly wrong.
const scratchPoison = 1 << 50

// span is a region resolved to memory: space 0 is SimRank.Mem, 1 is scratch.
type span struct {
	space, off, len int
}

func (a span) overlaps(b span) bool {
	return a.len > 0 && b.len > 0 && a.space == b.space && a.off < b.off+b.len && b.off < a.off+a.len
}

type sim struct {
	plans []*Plan
	ranks []SimRank
	f     ReduceFunc
}

// resolve maps region g of rank i to memory, checking bounds. An empty
// region of BufNone is allowed (0-length transfers).
func (s *sim) resolve(i int, g Region) (span, error) {
	r := &s.ranks[i]
	if g.Off < 0 || g.Len < 0 {
		return span{}, fmt.Errorf("%w: rank %d: region %s has negative offset or length", ErrBounds, i, g)
	}
	var w Window
	space := 0
	switch g.Buf {
	case BufNone:
		if g.Len != 0 || g.Off != 0 {
			return span{}, fmt.Errorf("%w: rank %d: region of no buffer with %d elements", ErrMalformed, i, g.Len)
		}
		return span{space: -1}, nil
	case BufSend:
		w = r.Send
	case BufRecv:
		w = r.Recv
	case BufScratch:
		w = Window{Len: len(r.Scratch)}
		space = 1
	default:
		return span{}, fmt.Errorf("%w: rank %d: unknown buffer %d", ErrMalformed, i, g.Buf)
	}
	if w.Absent {
		return span{}, fmt.Errorf("%w: rank %d: region %s names a buffer the rank does not have", ErrBounds, i, g)
	}
	if g.Off+g.Len > w.Len {
		return span{}, fmt.Errorf("%w: rank %d: region %s beyond %s length %d", ErrBounds, i, g, g.Buf, w.Len)
	}
	return span{space: space, off: w.Off + g.Off, len: g.Len}, nil
}

func (s *sim) mem(i int, sp span) []int64 {
	switch sp.space {
	case 0:
		return s.ranks[i].Mem[sp.off : sp.off+sp.len]
	case 1:
		return s.ranks[i].Scratch[sp.off : sp.off+sp.len]
	}
	return nil
}

// access is one op's footprint in a step.
type access struct {
	op            int
	reads, writes []span
}

// check validates rank i's plan statically.
func (s *sim) check(i int) error {
	p := s.plans[i]
	n := len(s.plans)
	for si, st := range p.Steps {
		sendTo := map[int]bool{}
		recvFrom := map[int]bool{}
		acc := make([]access, 0, len(st.Ops))
		for oi, o := range st.Ops {
			where := func(err error, format string, args ...any) error {
				return fmt.Errorf("%w: rank %d step %d op %d (%s): %s", err, i, si, oi, o, fmt.Sprintf(format, args...))
			}
			a := access{op: oi}
			src, err := s.resolve(i, o.Src)
			if err != nil {
				return where(err, "source")
			}
			dst, err := s.resolve(i, o.Dst)
			if err != nil {
				return where(err, "destination")
			}
			switch o.Kind {
			case OpSend, OpRecv, OpRecvReduce:
				if o.Peer < 0 || o.Peer >= n || o.Peer == i {
					return where(ErrMalformed, "peer %d invalid for %d ranks", o.Peer, n)
				}
			}
			switch o.Kind {
			case OpSend:
				if o.Dst != (Region{}) {
					return where(ErrMalformed, "send with a destination")
				}
				if sendTo[o.Peer] {
					return where(ErrConflict, "second send to peer %d in one step", o.Peer)
				}
				sendTo[o.Peer] = true
				a.reads = []span{src}
			case OpRecv:
				if o.Src != (Region{}) {
					return where(ErrMalformed, "receive with a source")
				}
				if recvFrom[o.Peer] {
					return where(ErrConflict, "second receive from peer %d in one step", o.Peer)
				}
				recvFrom[o.Peer] = true
				a.writes = []span{dst}
			case OpRecvReduce:
				if recvFrom[o.Peer] {
					return where(ErrConflict, "second receive from peer %d in one step", o.Peer)
				}
				recvFrom[o.Peer] = true
				if o.Src.Len != o.Dst.Len || o.Src.Buf == BufNone && o.Src.Len > 0 {
					return where(ErrMalformed, "source and destination lengths differ")
				}
				if src.overlaps(dst) && src != dst {
					return where(ErrConflict, "source and destination overlap without being the same memory")
				}
				a.reads, a.writes = []span{src}, []span{dst}
			case OpCopy, OpReduce:
				if o.Src.Len != o.Dst.Len {
					return where(ErrMalformed, "source and destination lengths differ")
				}
				if src.overlaps(dst) {
					return where(ErrConflict, "source and destination overlap")
				}
				a.reads, a.writes = []span{src}, []span{dst}
				if o.Kind == OpReduce {
					a.reads = append(a.reads, dst)
				}
			default:
				return where(ErrMalformed, "unknown op kind")
			}
			acc = append(acc, a)
		}
		if err := conflicts(acc, st.Ops); err != nil {
			return fmt.Errorf("%w: rank %d step %d: %v", ErrConflict, i, si, err)
		}
	}
	return nil
}

// conflicts finds an op of a step writing memory that another op of the
// step reads or writes. It sweeps the footprints in address order, so that
// a step with many ops costs about its number of overlaps, not its square.
func conflicts(acc []access, ops []Op) error {
	type use struct {
		sp    span
		op    int
		write bool
	}
	var us []use
	for _, a := range acc {
		for _, sp := range a.reads {
			if sp.len > 0 {
				us = append(us, use{sp, a.op, false})
			}
		}
		for _, sp := range a.writes {
			if sp.len > 0 {
				us = append(us, use{sp, a.op, true})
			}
		}
	}
	slices.SortFunc(us, func(a, b use) int {
		if a.sp.space != b.sp.space {
			return a.sp.space - b.sp.space
		}
		return a.sp.off - b.sp.off
	})
	var active []use
	for _, u := range us {
		k := 0
		for _, a := range active {
			if a.sp.overlaps(u.sp) {
				active[k] = a
				k++
			}
		}
		active = active[:k]
		for _, a := range active {
			if a.op != u.op && (a.write || u.write) {
				return fmt.Errorf("%s and %s use the same memory, one writing it", ops[a.op], ops[u.op])
			}
		}
		active = append(active, u)
	}
	return nil
}

// rankState is a rank's progress through its plan.
type rankState struct {
	step      int
	done      []bool      // per op of the current step
	left      int         // transfers of the current step not yet matched
	sendTo    map[int]int // peer -> op index, current step
	recvFrom  map[int]int
	clock     int // rounds elapsed when the current step started
	stepEnd   int // latest transfer round in the current step
	know      []uint64
	stepKnow  []uint64 // know when the current step started
	sentElems int64
}

func (s *sim) run() (*SimResult, error) {
	n := len(s.plans)
	words := (n + 63) / 64
	st := make([]rankState, n)
	res := &SimResult{SentElems: make([]int64, n), Steps: make([]int, n), Informed: make([]int, n)}
	queue := make([]int, 0, n)
	for i := range st {
		st[i].know = make([]uint64, words)
		st[i].stepKnow = make([]uint64, words)
		st[i].know[i/64] |= 1 << (i % 64)
		st[i].step = -1
		res.Steps[i] = len(s.plans[i].Steps)
		s.advance(i, &st[i])
		queue = append(queue, i)
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		a := &st[i]
		if a.step >= len(s.plans[i].Steps) {
			continue
		}
		ops := s.plans[i].Steps[a.step].Ops
		for oi, o := range ops {
			if a.done[oi] || o.Kind == OpCopy || o.Kind == OpReduce {
				continue
			}
			j := o.Peer
			b := &st[j]
			if b.step >= len(s.plans[j].Steps) {
				continue
			}
			var ok bool
			var oj int
			if o.Kind == OpSend {
				oj, ok = b.recvFrom[i]
			} else {
				oj, ok = b.sendTo[i]
			}
			if !ok || b.done[oj] {
				continue
			}
			if o.Kind == OpSend {
				if err := s.transfer(i, a, oi, j, b, oj, res); err != nil {
					return nil, err
				}
			} else {
				if err := s.transfer(j, b, oj, i, a, oi, res); err != nil {
					return nil, err
				}
			}
			if b.left == 0 {
				s.advance(j, b)
				queue = append(queue, j)
			}
		}
		if a.left == 0 {
			s.advance(i, a)
			queue = append(queue, i)
		}
	}
	var dl DeadlockError
	for i := range st {
		a := &st[i]
		if a.step < len(s.plans[i].Steps) {
			sr := StuckRank{Rank: i, Step: a.step}
			for oi, o := range s.plans[i].Steps[a.step].Ops {
				if !a.done[oi] {
					sr.Ops = append(sr.Ops, o)
				}
			}
			dl.Stuck = append(dl.Stuck, sr)
			continue
		}
		res.SentElems[i] = a.sentElems
		res.Rounds = max(res.Rounds, a.clock)
		for _, w := range a.know {
			res.Informed[i] += bits.OnesCount64(w)
		}
	}
	if len(dl.Stuck) > 0 {
		return nil, &dl
	}
	return res, nil
}

// advance ends rank i's current step and starts the next ones, running their
// local ops at once, until it reaches a step that waits for a transfer or the
// end of the plan.
func (s *sim) advance(i int, a *rankState) {
	p := s.plans[i]
	if a.step >= 0 {
		a.clock = max(a.clock, a.stepEnd)
	}
	for {
		a.step++
		if a.step >= len(p.Steps) {
			return
		}
		ops := p.Steps[a.step].Ops
		a.done = make([]bool, len(ops))
		a.left = 0
		a.sendTo = map[int]int{}
		a.recvFrom = map[int]int{}
		a.stepEnd = a.clock
		copy(a.stepKnow, a.know)
		for oi, o := range ops {
			switch o.Kind {
			case OpSend:
				a.sendTo[o.Peer] = oi
				a.left++
			case OpRecv, OpRecvReduce:
				a.recvFrom[o.Peer] = oi
				a.left++
			case OpCopy, OpReduce:
				src, _ := s.resolve(i, o.Src)
				dst, _ := s.resolve(i, o.Dst)
				d, sm := s.mem(i, dst), s.mem(i, src)
				if o.Kind == OpCopy {
					copy(d, sm)
				} else {
					for k := range d {
						d[k] = s.f(d[k], sm[k])
					}
				}
				a.done[oi] = true
			}
		}
		if a.left > 0 {
			return
		}
	}
}

// transfer runs the send oi of rank i against the receive oj of rank j.
func (s *sim) transfer(i int, a *rankState, oi int, j int, b *rankState, oj int, res *SimResult) error {
	so := s.plans[i].Steps[a.step].Ops[oi]
	ro := s.plans[j].Steps[b.step].Ops[oj]
	if so.Src.Len != ro.Dst.Len {
		return fmt.Errorf("%w: rank %d step %d sends %d elements (%s) to rank %d, whose step %d receives %d (%s)",
			ErrLength, i, a.step, so.Src.Len, so, j, b.step, ro.Dst.Len, ro)
	}
	src, _ := s.resolve(i, so.Src)
	dst, _ := s.resolve(j, ro.Dst)
	in := s.mem(i, src)
	out := s.mem(j, dst)
	if ro.Kind == OpRecv {
		copy(out, in)
	} else {
		rs, _ := s.resolve(j, ro.Src)
		mine := s.mem(j, rs)
		for k := range out {
			if ro.PeerFirst {
				out[k] = s.f(in[k], mine[k])
			} else {
				out[k] = s.f(mine[k], in[k])
			}
		}
	}
	a.done[oi], b.done[oj] = true, true
	a.left--
	b.left--
	t := max(a.clock, b.clock) + 1
	a.stepEnd = max(a.stepEnd, t)
	b.stepEnd = max(b.stepEnd, t)
	for k := range b.know {
		b.know[k] |= a.stepKnow[k]
	}
	a.sentElems += int64(so.Src.Len)
	res.Transfers++
	res.Elems += int64(so.Src.Len)
	return nil
}

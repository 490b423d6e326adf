package algo

// PAT, after NCCL's Parallel Aggregated Trees, for AllGather and
// ReduceScatter: ceil(log2 n) network steps for any n, the choice for small
// messages on many ranks with one rank per server.
//
// AllGather runs n binomial trees at once, one rooted at every rank, all
// with the same shape relative to their root, and aggregates whatever the
// trees send between the same two ranks into one transfer. The farthest
// distance goes first and carries a single block: with P = 2^ceil(log2 n),
// round m = P/2, P/4, ..., 1 has every rank send to rank+m all the blocks it
// holds, so the amount doubles as the distance halves. 4 ranks, rank 0
// (block k = rank k's contribution):
//
//	round m=2: send block 0 to rank 2, receive block 2 from rank 2
//	round m=1: send blocks 0,2 to rank 1, receive blocks 3,1 from rank 3
//
// A rank keeps its blocks in scratch in "relative" order: the block of rank
// rank-v sits in slot v, and slots are laid out by the bit-reversal of v
// over log2 P bits. Before round m a rank holds exactly the slots with
// v = 0 mod 2m, which bit-reversed are the first P/(2m) positions, and the
// slots it receives (v = m mod 2m) are the next P/(2m): every transfer is a
// single contiguous region, sent from a prefix and received into the range
// after it. A final local step copies slot v into block rank-v of the
// receive buffer.
//
// When n is not a power of two, slots v >= n exist only in the layout. The
// transfers keep their contiguous shape and carry whatever those positions
// hold (trailing ones are trimmed); the receiver never uses them, because
// a slot v < n is always filled from a slot v-m < n. At worst a transfer is
// twice as large as needed: acceptable for the small messages PAT is for.
//
// ReduceScatter is the mirror: slot v holds the partial result for rank
// rank+v, rounds go m = 1, 2, ..., P/2, and in round m a rank sends the
// slots v = m mod 2m to rank+m, which reduces them into its slots v-m.
// The last round is the farthest and carries one block, reduced straight
// into the receive buffer. Garbage would harm here, so when a transfer has
// slots v >= n inside it, it lands in a staging area and only the real
// slots are reduced, in a local step.
//
// Scratch: P blocks of layout, plus P/2 blocks of staging for a
// ReduceScatter whose n is not a power of two. Request.ScratchLimit bounds
// it: blocks are then cut into pieces, each piece runs its own set of trees
// in an area of scratch sized for the piece, and the pieces are pipelined,
// piece j+1 one step (AllGather) or two (ReduceScatter) behind piece j, so
// that the rounds of different pieces share steps (their peers differ:
// every round has its own distance). Steps grow from about log2 n to about
// log2 n + pieces rather than pieces x log2 n.

import (
	"fmt"
	"math/bits"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// PAT builds parallel-aggregated-tree AllGather and ReduceScatter plans.
type PAT struct{}

// Name implements plan.Algorithm.
func (PAT) Name() string { return "pat" }

// Colls implements Collectives.
func (PAT) Colls() []plan.Coll { return []plan.Coll{plan.AllGather, plan.ReduceScatter} }

// Build implements plan.Algorithm.
func (a PAT) Build(req plan.Request) (*plan.Plan, error) {
	if err := check(a, req); err != nil {
		return nil, err
	}
	b := newBuilder(req, a.Name())
	if req.Size == 1 {
		localCopy(b, req, req.Count)
		return b.plan(), nil
	}
	l := newPatLayout(req.Size)
	var err error
	switch req.Coll {
	case plan.AllGather:
		err = patAllGather(b, req, l)
	case plan.ReduceScatter:
		err = patReduceScatter(b, req, l)
	default:
		err = fmt.Errorf("rank %d: pat: %s: %w", req.Rank, req.Coll, ErrUnsupported)
	}
	if err != nil {
		return nil, err
	}
	return b.plan(), nil
}

// patLayout is the bit-reversed slot order over P = 2^L positions.
type patLayout struct {
	n, p, bits int
}

func newPatLayout(n int) patLayout {
	k := ceilLog2(n)
	return patLayout{n: n, p: 1 << k, bits: k}
}

// v returns the relative rank stored at position pos (and pos at v: the
// bit reversal is its own inverse).
func (l patLayout) v(pos int) int {
	return int(bits.Reverse64(uint64(pos)) >> (64 - l.bits))
}

// incoming lists, for round m, the positions of the slots received, whose
// relative ranks are m mod 2m: [base, 2base) with base = P/(2m). real tells
// which hold a slot v < n.
func (l patLayout) incoming(m int) (base int, real []bool) {
	base = l.p / (2 * m)
	real = make([]bool, base)
	for i := range real {
		real[i] = l.v(base+i) < l.n
	}
	return base, real
}

// trimmed is how many leading positions of an incoming range to transfer:
// up to the last real one.
func trimmed(real []bool) int {
	k := len(real)
	for k > 0 && !real[k-1] {
		k--
	}
	return k
}

// pieces decides how to cut each block so that the plan's scratch stays
// within limit elements (0: no limit): one piece, or several pieces each
// running its own set of trees, pipelined one step (AllGather) or two
// (ReduceScatter) behind each other. A piece's scratch area is reused by
// piece j+L+1, when the piece L+1 before it has finished with it, so at most
// L+1 areas exist at a time. It returns the piece count and the size of an
// area.
func (l patLayout) pieces(c, limit int, rs bool) (pieces, area int, err error) {
	perElem := l.p // layout slots per element of a piece
	if rs && l.holes() {
		perElem += l.p / 2 // staging
	}
	if limit <= 0 || perElem*c <= limit {
		return 1, perElem * c, nil
	}
	areas := l.bits + 1
	q := limit / (areas * perElem)
	if q < 1 {
		return 0, 0, fmt.Errorf("pat needs at least %d scratch elements for %d ranks, the limit is %d: %w",
			areas*perElem, l.n, limit, ErrUnsupported)
	}
	pieces = (c + q - 1) / q
	q = (c + pieces - 1) / pieces
	return pieces, perElem * q, nil
}

// PATPieces is how many pieces PAT cuts each block of count elements
// into on n ranks to keep its scratch within limit elements (0: no
// limit), for a ReduceScatter when rs, or the error Build would give: for
// the selector, which prices the pieces' steps and must not choose PAT
// where it cannot run.
func PATPieces(n, count, limit int, rs bool) (int, error) {
	if n <= 1 {
		return 1, nil
	}
	pieces, _, err := newPatLayout(n).pieces(count, limit, rs)
	return pieces, err
}

// holes tells whether some ReduceScatter round carries slots v >= n inside
// its transfer, and so needs staging.
func (l patLayout) holes() bool {
	for m := 1; m < l.p; m *= 2 {
		_, real := l.incoming(m)
		for _, ok := range real[:trimmed(real)] {
			if !ok {
				return true
			}
		}
	}
	return false
}

// timeline collects ops by global step, for pipelined pieces.
type timeline [][]*plan.Op

func (t timeline) add(step int, ops ...*plan.Op) { t[step] = append(t[step], ops...) }

func (t timeline) emit(b *builder) {
	for _, ops := range t {
		b.step(ops...)
	}
}

func patAllGather(b *builder, req plan.Request, l patLayout) error {
	n, r, c := req.Size, req.Rank, req.Count
	pieces, area, err := l.pieces(c, req.ScratchLimit, false)
	if err != nil {
		return fmt.Errorf("rank %d: %w", r, err)
	}
	b.scratch(min(pieces, l.bits+1) * area)
	tl := make(timeline, pieces+l.bits)
	for j := 0; j < pieces; j++ {
		off, q := chunk(c, pieces, j)
		if q == 0 {
			continue
		}
		at := (j % (l.bits + 1)) * area
		slots := func(from, k int) plan.Region { return scratchBuf(at+from*q, k*q) }
		step := j
		for m := l.p / 2; m >= 1; m /= 2 {
			base, real := l.incoming(m)
			k := trimmed(real)
			src := slots(0, k)
			var own *plan.Op
			if m == l.p/2 {
				src = sendBuf(off, q) // k == 1: the own piece alone
				own = copyOp(sendBuf(off, q), slots(0, 1))
			}
			tl.add(step, own, send(mod(r+m, n), src), recv(mod(r-m, n), slots(base, k)))
			step++
		}
		if !req.InPlace {
			tl.add(step, copyOp(sendBuf(off, q), recvBuf(r*c+off, q)))
		}
		for v := 1; v < n; v++ {
			tl.add(step, copyOp(slots(l.v(v), 1), recvBuf(mod(r-v, n)*c+off, q)))
		}
	}
	tl.emit(b)
	return nil
}

func patReduceScatter(b *builder, req plan.Request, l patLayout) error {
	n, r, c := req.Size, req.Rank, req.Count
	pieces, area, err := l.pieces(c, req.ScratchLimit, true)
	if err != nil {
		return fmt.Errorf("rank %d: %w", r, err)
	}
	b.scratch(min(pieces, l.bits+1) * area)
	tl := make(timeline, 2*pieces+2*l.bits)
	for j := 0; j < pieces; j++ {
		off, q := chunk(c, pieces, j)
		if q == 0 {
			continue
		}
		at := (j % (l.bits + 1)) * area
		slots := func(from, k int) plan.Region { return scratchBuf(at+from*q, k*q) }
		staging := at + l.p*q
		step := 2 * j
		for v := 0; v < n; v++ {
			tl.add(step, copyOp(sendBuf(mod(r+v, n)*c+off, q), slots(l.v(v), 1)))
		}
		for m := 1; m < l.p; m *= 2 {
			base, real := l.incoming(m)
			k := trimmed(real)
			out := send(mod(r+m, n), slots(base, k))
			from := mod(r-m, n)
			holes := false
			for _, ok := range real[:k] {
				holes = holes || !ok
			}
			switch {
			case m == l.p/2: // k == 1, the own slot: finish in the receive buffer
				tl.add(step+1, out, recvReduce(from, slots(0, 1), recvBuf(off, q)))
			case !holes:
				tl.add(step+1, out, recvReduce(from, slots(0, k), slots(0, k)))
			default:
				tl.add(step+1, out, recv(from, scratchBuf(staging, k*q)))
				for i := 0; i < k; {
					if !real[i] {
						i++
						continue
					}
					e := i
					for e < k && real[e] {
						e++
					}
					tl.add(step+2, reduceOp(slots(i, e-i), scratchBuf(staging+i*q, (e-i)*q)))
					i = e
				}
			}
			step += 2
		}
	}
	tl.emit(b)
	return nil
}

// PATRounds returns, for n ranks, how many blocks each round of a PAT
// AllGather transfers, farthest round first (ReduceScatter runs the same
// rounds in reverse). The cost model uses it; len is ceil(log2 n).
func PATRounds(n int) []int {
	if n <= 1 {
		return nil
	}
	l := newPatLayout(n)
	var ks []int
	for m := l.p / 2; m >= 1; m /= 2 {
		_, real := l.incoming(m)
		ks = append(ks, trimmed(real))
	}
	return ks
}

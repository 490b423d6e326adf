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
// Scratch: P blocks of layout, plus up to P/2 blocks of staging for
// ReduceScatter. The per-chunk trees NCCL uses to bound staging for large
// sizes are not built: large sizes belong to ring.

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
	switch req.Coll {
	case plan.AllGather:
		patAllGather(b, req, l)
	case plan.ReduceScatter:
		patReduceScatter(b, req, l)
	default:
		return nil, fmt.Errorf("rank %d: pat: %s: %w", req.Rank, req.Coll, ErrUnsupported)
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

func patAllGather(b *builder, req plan.Request, l patLayout) {
	n, r, c := req.Size, req.Rank, req.Count
	slots := func(from, k int) plan.Region { return scratchBuf(from*c, k*c) }
	b.scratch(l.p * c)
	for m := l.p / 2; m >= 1; m /= 2 {
		base, real := l.incoming(m)
		k := trimmed(real)
		src := slots(0, k)
		var own *plan.Op
		if m == l.p/2 {
			src = sendBuf(0, c) // k == 1: the own block alone
			own = copyOp(sendBuf(0, c), slots(0, 1))
		}
		b.step(own, send(mod(r+m, n), src), recv(mod(r-m, n), slots(base, k)))
	}
	ops := []*plan.Op{}
	if !req.InPlace {
		ops = append(ops, copyOp(sendBuf(0, c), recvBuf(r*c, c)))
	}
	for v := 1; v < n; v++ {
		ops = append(ops, copyOp(slots(l.v(v), 1), recvBuf(mod(r-v, n)*c, c)))
	}
	b.step(ops...)
}

func patReduceScatter(b *builder, req plan.Request, l patLayout) {
	n, r, c := req.Size, req.Rank, req.Count
	slots := func(from, k int) plan.Region { return scratchBuf(from*c, k*c) }
	staging := l.p * c
	b.scratch(l.p * c)
	ops := []*plan.Op{}
	for v := 0; v < n; v++ {
		ops = append(ops, copyOp(sendBuf(mod(r+v, n)*c, c), slots(l.v(v), 1)))
	}
	b.step(ops...)
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
			b.step(out, recvReduce(from, slots(0, 1), recvBuf(0, c)))
		case !holes:
			b.step(out, recvReduce(from, slots(0, k), slots(0, k)))
		default:
			b.scratch(staging + k*c)
			b.step(out, recv(from, scratchBuf(staging, k*c)))
			ops := []*plan.Op{}
			for i := 0; i < k; {
				if !real[i] {
					i++
					continue
				}
				j := i
				for j < k && real[j] {
					j++
				}
				ops = append(ops, reduceOp(slots(i, j-i), scratchBuf(staging+i*c, (j-i)*c)))
				i = j
			}
			b.step(ops...)
		}
	}
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

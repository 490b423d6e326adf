package selector

import (
	"fmt"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// shape is what an algorithm costs on its critical path, before prices:
// counts per link class, bytes, local work. The tests hold the counts
// against plan.Simulate's Rounds and per-rank bytes for the same plans.
type shape struct {
	lat    [numClasses]float64 // network latencies (dependent rounds)
	bytes  [numClasses]float64 // bytes sent on the critical path
	reduce float64             // bytes of one input reduced
	copy   float64             // bytes copied locally
	local  float64             // steps with local work only
	msgs   float64             // messages posted (several per step for mesh, pairwise)
	// handoffs counts the receives of a step beyond its first, on the
	// critical path: the executor runs the first on the calling goroutine
	// and hands each other to a worker goroutine (sends that fit go out
	// inline, without one).
	handoffs float64
	maxOp    float64 // largest single transfer, bytes
	// heads is the first frameHead bytes of each round's transfer over
	// shm, summed over the rounds (Model.Head).
	heads float64
	// exchBytes is the part of bytes[Shm] sent in rounds in which a
	// rank sends to and receives from the same partner at once (rhd's
	// exchanges). With more ranks than cores such a round moves only
	// while both partners hold a core, where a chain (ring) moves while
	// any link of it does (Model.Exchange).
	exchBytes float64
	// fromSend is the part of bytes[Shm] that leaves from the caller's
	// send buffer, which the runtime may post in place (Model.Posted),
	// and coll the collective.
	fromSend float64
	coll     plan.Coll
	size     float64 // the call's bytes (Call.Bytes)
	// fused is the part of bytes[Shm] whose receiver only receives in
	// its round and reduces as the bytes arrive (oneWayReduce): over
	// shm the reduction is the receive and the transfer costs nothing
	// more; over TCP (Model.NoShm) it does.
	fused float64
	// busy is the share of the ranks at work, averaged over the bytes of
	// the rounds; 0 means all of them throughout. A tree's early rounds
	// (a Reduce's last) pair few of the ranks; rhd on a rank count that
	// is not a power of two leaves the folded ranks waiting through the
	// power-of-two rounds, and all but the pairs through the fold and
	// the unfold. With more ranks than cores, only the ranks at work
	// share the cores; the others sleep (Model.terms).
	busy float64
	// ringsBusy, when set, is busy for a call whose transfers go
	// through the rings rather than posted in place (Model.posts): a
	// mesh Broadcast's.
	ringsBusy float64
}

// atWork gathers shape.busy: the bytes of rounds, each weighted by the
// share of the ranks at work in it.
type atWork struct{ weighted, bytes float64 }

// round adds a round of the given bytes in which active of n ranks work.
func (w *atWork) round(bytes float64, active, n int) {
	w.weighted += bytes * float64(active) / float64(n)
	w.bytes += bytes
}

// share is the mean share of ranks at work, 0 (all, for busy) when no
// bytes moved.
func (w atWork) share() float64 {
	if w.bytes == 0 {
		return 0
	}
	return w.weighted / w.bytes
}

func (s *shape) round(c Class, bytes float64) {
	s.lat[c]++
	s.bytes[c] += bytes
	s.msgs++
	s.maxOp = max(s.maxOp, bytes)
	if c == Shm {
		s.heads += min(bytes, frameHead)
	}
}

// frameHead is how much of a transfer over shm moves at the slower pace
// of its first bytes (Model.Head): where a round's cost per byte halves
// (docs/selector.md#heads-of-shm-rounds).
const frameHead = 16 << 10

// oneWayReduce marks bytes that a round charged as received by a rank
// that only receives in it and reduces what arrives. Over shm it reduces
// straight out of the ring (VisitPayload), so its receive is its
// reduction, and the sender copies in on another core meanwhile: the
// round costs the reduction (gamma, the larger price), not the transfer
// and the reduction one after the other, as it does for a rank that also
// sends in the step (an AllReduce exchange, a Reduce chain's relay).
// Over TCP the payload is received into a buffer first, so the transfer
// stays (Model.terms). Charged both, tree Reduce was priced about twice
// what it measured (docs/selector.md#how-the-shapes-count).
func (s *shape) oneWayReduce(c Class, bytes float64) {
	if c == Shm {
		s.fused += bytes
	}
}

// flat is the class a step pays when its pairs are not aligned with
// servers: as soon as the job spans two servers some pair of every step
// crosses, and lockstep makes everyone wait for it.
func flat(t Topo) Class {
	if t.servers() > 1 {
		return Net
	}
	return Shm
}

// aligned is the class of a step whose partners are distance d apart in an
// XOR or binomial pattern: within a server when servers hold a power of two
// ranks each, evenly, and d is below that.
func aligned(t Topo, d int) Class {
	ps := t.perServer()
	if t.servers() == 1 || (ps&(ps-1) == 0 && t.Ranks%ps == 0 && d < ps) {
		return Shm
	}
	return Net
}

// costCall is the call a cost function counts for, with what every
// formula starts from.
type costCall struct {
	coll plan.Coll
	topo Topo
	n    int     // ranks, two or more
	nf   float64 // n as a float
	size float64 // the call's bytes (Call.Bytes)
	// chunk is one rank's share: a chunk of an AllReduce, a block of an
	// AllGather or an AlltoAll.
	chunk float64
	flat  Class // the class of a step whose pairs ignore servers (flat)
	// scratch bounds the plan's scratch, in bytes (Model.Scratch); 0
	// means none.
	scratch int64
}

// costFunc counts what an algorithm costs for call k into s, which holds
// the collective and the size already. An error says why the algorithm
// cannot serve the call (a topology it needs).
type costFunc func(s *shape, k costCall) error

// costs holds each algorithm's cost, by the name algo's registry gives
// it; each shape_<algorithm>.go registers its own.
var costs = map[string]costFunc{}

// registerCost registers f as the cost of algorithm a.
func registerCost(a plan.Algorithm, f costFunc) {
	if _, dup := costs[a.Name()]; dup {
		panic("selector: two costs for " + a.Name())
	}
	costs[a.Name()] = f
}

// shapeOf prices nothing yet: it counts, with no bound on scratch. An
// error says why algorithm name cannot serve the call.
func shapeOf(name string, coll plan.Coll, t Topo, size int64) (shape, error) {
	return shapeWithin(name, coll, t, size, 0)
}

// shapeWithin is shapeOf for a plan whose scratch is bounded by scratch
// bytes (0: no bound).
func shapeWithin(name string, coll plan.Coll, t Topo, size, scratch int64) (shape, error) {
	a, ok := algo.Lookup(name)
	if !ok {
		return shape{}, fmt.Errorf("unknown algorithm %q", name)
	}
	if !algo.Serves(a, coll) {
		return shape{}, fmt.Errorf("%s does not implement %s (it serves %s)", name, coll, collList(a))
	}
	cost, ok := costs[name]
	if !ok {
		return shape{}, fmt.Errorf("no cost formula for %s", name)
	}
	s := shape{coll: coll, size: float64(size)}
	if t.Ranks == 1 {
		if coll != plan.Barrier {
			s.copy = float64(size)
		}
		return s, nil
	}
	k := costCall{coll: coll, topo: t, n: t.Ranks, nf: float64(t.Ranks), size: float64(size),
		chunk: float64(size) / float64(t.Ranks), flat: flat(t), scratch: scratch}
	if err := cost(&s, k); err != nil {
		return shape{}, err
	}
	// The transfers from the send buffer (Model.Posted), where the
	// algorithm's cost did not count them: all of an AlltoAll's,
	// whatever the algorithm, and of an AllGather's the first step's
	// own block (they forward from the receive buffer after it).
	switch {
	case coll == plan.AlltoAll || coll == plan.AlltoAllV:
		s.fromSend = s.bytes[Shm]
	case coll == plan.AllGather && s.fromSend == 0:
		s.fromSend = min(k.chunk, s.bytes[Shm])
	}
	return s, nil
}

func collList(a plan.Algorithm) string {
	cs, _ := a.(algo.Collectives)
	var out string
	for i, c := range cs.Colls() {
		if i > 0 {
			out += ", "
		}
		out += c.String()
	}
	return out
}

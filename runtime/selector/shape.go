package selector

import (
	"fmt"
	"math/bits"

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

func ceilLog2(n int) int {
	if n <= 1 {
		return 0
	}
	return bits.Len(uint(n - 1))
}

// shapeOf prices nothing yet: it counts. An error says why algorithm name
// cannot serve the call.
func shapeOf(name string, coll plan.Coll, t Topo, size int64) (shape, error) {
	a, ok := algo.Lookup(name)
	if !ok {
		return shape{}, fmt.Errorf("unknown algorithm %q", name)
	}
	if !algo.Serves(a, coll) {
		return shape{}, fmt.Errorf("%s does not implement %s (it serves %s)", name, coll, collList(a))
	}
	s := shape{coll: coll, size: float64(size)}
	n := t.Ranks
	S := float64(size)
	if n == 1 {
		if coll != plan.Barrier {
			s.copy = S
		}
		return s, nil
	}
	nf := float64(n)
	c := S / nf // a chunk or block
	f := flat(t)
	switch name {
	case "ring":
		switch coll {
		case plan.AllReduce:
			for k := 0; k < 2*(n-1); k++ {
				s.round(f, c)
			}
			s.reduce = (nf - 1) * c
		case plan.AllGather, plan.ReduceScatter, plan.AlltoAll, plan.AlltoAllV:
			for k := 0; k < n-1; k++ {
				s.round(f, c)
			}
			if coll == plan.ReduceScatter {
				s.reduce = (nf - 1) * c
			} else {
				s.copy = c
			}
		case plan.Broadcast, plan.Reduce:
			// n pieces down a chain of n ranks: 2n-2 dependent steps of
			// one piece each. In every step but the first and the last
			// some rank relays: it receives one piece and forwards
			// another (ring.go), both on its own core. That is twice the
			// byte work of a step that only sends or only receives,
			// which is all the steps of tree and mesh, the other
			// Broadcast and Reduce algorithms: they are charged the
			// bytes a rank sends, like the exchanges of the other
			// collectives, where every rank does both in every step and
			// which the link's beta was fitted to. Without the relays
			// ring Broadcast was priced well below what it measured
			// (docs/selector.md#how-the-shapes-count). A Reduce relay's
			// receive is its reduction (oneWayReduce), so there only the
			// forward is extra.
			for k := 0; k < 2*n-2; k++ {
				s.round(f, c)
				relay := k > 0 && k < 2*n-3
				switch {
				case coll == plan.Broadcast && relay:
					s.bytes[f] += c // the relay's second copy
				case coll == plan.Reduce && !relay:
					s.oneWayReduce(f, c)
				}
			}
			if coll == plan.Reduce {
				s.reduce = (2*nf - 2) * c
			}
		case plan.Barrier:
			for k := 0; k < n-1; k++ {
				s.round(f, 0)
			}
		}
	case "tree":
		var w atWork
		for m := 1; m < n; m *= 2 {
			class := aligned(t, m)
			s.round(class, S)
			if coll == plan.Reduce {
				s.reduce += S
				s.oneWayReduce(class, S)
			}
			// The pairs at distance m: ranks m, 3m, 5m, ... below n
			// with the rank m below them.
			w.round(S, 2*((n+m-1)/(2*m)), n)
		}
		// A Broadcast's ranks that are not in a round still hold their
		// share of the cores: they wait to receive, and a receive over
		// shm polls through the yield window (100 us when ranks
		// outnumber cores, runtime's waitPolicy) before it sleeps,
		// longer than a round of up to a few MiB, so they count as at
		// work. A Reduce's early ranks measure as asleep and count so
		// (docs/selector.md#how-the-shapes-count).
		if coll == plan.Reduce {
			s.busy = w.share()
		}
	case "dissemination":
		for d := 1; d < n; d *= 2 {
			s.round(f, 0)
		}
	case "pairwise":
		for k := 0; k < n-1; k += algo.MaxPeersInFlight {
			peers := min(algo.MaxPeersInFlight, n-1-k)
			s.round(f, float64(peers)*c)
			s.msgs += float64(2*peers - 1)
			s.handoffs += float64(peers - 1)
			s.maxOp = c
		}
		s.heads = s.lat[Shm] * min(c, frameHead)
		s.copy = c
	case "rhd":
		p := 1 << (bits.Len(uint(n)) - 1)
		extra := n - p
		pf := float64(p)
		// Folding renumbers the ranks, so the XOR partners of virtual
		// ranks no longer line up with servers.
		class := func(m int) Class {
			if extra > 0 {
				return f
			}
			return aligned(t, m)
		}
		exchange := func(c Class, bytes float64) {
			s.round(c, bytes)
			if c == Shm {
				s.exchBytes += bytes
			}
		}
		half := func(reduce bool) {
			for m := p / 2; m >= 1; m /= 2 {
				exchange(class(m), float64(m)*S/pf)
				if reduce {
					s.reduce += float64(m) * S / pf
				}
			}
		}
		double := func() {
			for m := 1; m < p; m *= 2 {
				exchange(class(m), float64(m)*S/pf)
			}
		}
		fold := aligned(t, 1)
		// The fold's rounds are one-way: the even rank of a pair only
		// sends, the odd one only receives (and reduces, folding in).
		var folded float64
		foldRound := func(bytes float64, reduce bool) {
			if extra == 0 {
				return
			}
			s.round(fold, bytes)
			folded += bytes
			if reduce {
				s.reduce += bytes
				s.oneWayReduce(fold, bytes)
			}
		}
		switch coll {
		case plan.AllReduce:
			foldRound(S, true)
			half(true)
			double()
			foldRound(S, false)
		case plan.ReduceScatter:
			foldRound(S, true)
			half(true)
			foldRound(c, false)
			if extra > 0 {
				s.copy += c
			}
		case plan.AllGather:
			foldRound(c, false)
			double()
			foldRound(S, false)
			s.copy = c
		}
		if extra > 0 {
			var w atWork
			w.round(folded, 2*extra, n)
			w.round(s.bytes[Shm]+s.bytes[Net]-folded, p, n)
			s.busy = w.share()
		}
	case "mesh", "oneshot":
		if t.servers() > 1 {
			return shape{}, fmt.Errorf("%s runs within one server, the job spans %d", name, t.servers())
		}
		peers := nf - 1
		switch {
		case name == "oneshot" && n == 2:
			// Out of place the peer's input is reduced on arrival,
			// straight into recv: no copy, no local step. In place
			// it is reduced on arrival into scratch and copied to
			// recv in a step of its own. A Call does not say which,
			// and calibrations time both and take the median: half
			// the copy is in the price, and the step goes.
			s.round(Shm, S)
			s.reduce = S
			s.copy = S / 2
		case name == "oneshot":
			s.round(Shm, peers*S)
			s.reduce = peers * S
			s.copy = S
			s.local = nf
		case coll == plan.AllReduce:
			s.round(Shm, peers*c)
			s.round(Shm, peers*c)
			s.reduce = peers * c
			s.local = nf - 2
		case coll == plan.ReduceScatter:
			s.round(Shm, peers*c)
			s.reduce = peers * c
			s.local = nf - 2
		case coll == plan.Reduce:
			s.round(Shm, peers*S) // the root receives from everyone
			s.reduce = peers * S
			s.oneWayReduce(Shm, peers*S)
			s.local = nf - 2
		case coll == plan.Broadcast:
			s.round(Shm, peers*S) // the root sends to everyone
			// Through the rings the root copies every peer's share in
			// and each receiver its own out, mostly while the others
			// wait for the root (yielding, then asleep): about two
			// thirds of the ranks at work, not all; any share from 0.5
			// to 0.75 chooses alike. Posted, the receivers read the
			// root's memory while it waits, and all count
			// (docs/selector.md#how-the-shapes-count).
			s.ringsBusy = 2.0 / 3
		case coll == plan.Barrier:
			s.round(Shm, 0)
		default: // AllGather, AlltoAll, AlltoAllV
			s.round(Shm, peers*c)
			s.copy = c
		}
		// Every round posts a message to each peer; each transfer is one
		// peer's share of the round's bytes. A rank receives from every
		// peer in each round, but for Broadcast, whose root only sends.
		s.msgs = s.lat[Shm] * peers
		if coll != plan.Broadcast {
			s.handoffs = s.lat[Shm] * (peers - 1)
		}
		s.maxOp = s.bytes[Shm] / max(s.lat[Shm], 1) / peers
		// A round's transfers run side by side: its head is one
		// transfer's.
		s.heads = s.lat[Shm] * min(s.maxOp, frameHead)
	case "hier":
		k, sv := t.perServer(), t.servers()
		if sv < 2 || k < 2 || n%sv != 0 {
			return shape{}, fmt.Errorf("hier needs two or more servers of two or more ranks each, evenly (%d ranks on %d servers)", n, sv)
		}
		// Phases run one after another: add their shapes. Within a
		// server the ranks talk over shm, between servers only columns
		// talk, one rank per server each.
		intra, inter := Topo{Ranks: k, Servers: 1}, Topo{Ranks: sv, Servers: sv}
		kf := float64(k)
		var parts []shape
		add := func(name string, coll plan.Coll, t Topo, size float64) error {
			p, err := shapeOf(name, coll, t, int64(size))
			parts = append(parts, p)
			return err
		}
		var err error
		switch coll {
		case plan.AllReduce:
			// The ring reduce-scatter and all-gather phases of a
			// ring AllReduce within the server around an RHD AllReduce
			// of one chunk within the column.
			ring, _ := shapeOf("ring", plan.AllReduce, intra, size)
			parts = append(parts, ring)
			err = add("rhd", plan.AllReduce, inter, S/kf)
		case plan.AllGather:
			err = add("rhd", plan.AllGather, inter, S/kf)
			if err == nil {
				err = add("ring", plan.AllGather, intra, S)
			}
			s.copy += S
		case plan.ReduceScatter:
			s.copy += S
			err = add("ring", plan.ReduceScatter, intra, S)
			if err == nil {
				err = add("rhd", plan.ReduceScatter, inter, S/kf)
			}
		case plan.Broadcast:
			err = add("tree", coll, inter, S)
			if err == nil {
				err = add("tree", coll, intra, S)
			}
		case plan.Reduce:
			err = add("tree", coll, intra, S)
			if err == nil {
				err = add("tree", coll, inter, S)
			}
		}
		if err != nil {
			return shape{}, err
		}
		for _, p := range parts {
			for c := range s.lat {
				s.lat[c] += p.lat[c]
				s.bytes[c] += p.bytes[c]
			}
			s.reduce += p.reduce
			s.copy += p.copy
			s.local += p.local
			s.msgs += p.msgs
			s.handoffs += p.handoffs
			s.fused += p.fused
			s.heads += p.heads
			s.maxOp = max(s.maxOp, p.maxOp)
			// busy is not carried over: the parts run one after
			// another on every rank, priced as all at work.
		}
	case "pat":
		ks := algo.PATRounds(n)
		for i := range ks {
			k := float64(ks[i])
			if coll == plan.ReduceScatter {
				k = float64(ks[len(ks)-1-i])
				s.reduce += k * c
			}
			s.round(f, k*c)
		}
		s.copy = S + c
	default:
		return shape{}, fmt.Errorf("no cost formula for %s", name)
	}
	// The transfers from the send buffer (Model.Posted): all of an
	// AlltoAll's, whatever the algorithm; of an AllGather's and a
	// Broadcast's, all of mesh's, and of the others the first step's
	// only (an AllGather's own block, the root's first piece or whole
	// buffer; they forward from the receive buffer after it).
	switch {
	case coll == plan.AlltoAll || coll == plan.AlltoAllV || ((coll == plan.AllGather || coll == plan.Broadcast) && name == "mesh"):
		s.fromSend = s.bytes[Shm]
	case coll == plan.AllGather || (coll == plan.Broadcast && name == "ring"):
		s.fromSend = min(c, s.bytes[Shm])
	case coll == plan.Broadcast && name == "tree":
		s.fromSend = min(S, s.bytes[Shm])
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

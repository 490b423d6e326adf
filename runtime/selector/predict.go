package selector

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// MaxRanks is the largest job the model prices.
const MaxRanks = 65536

// Call is what the selector chooses for. Bytes is the call's size as
// nccl-tests counts it: the buffer for AllReduce, Broadcast and Reduce, the
// whole receive buffer for AllGather (Size x each rank's share), the whole
// send buffer for ReduceScatter, and one rank's whole send buffer for
// AlltoAll and AlltoAllV; Barrier ignores it.
type Call struct {
	Coll  plan.Coll
	Bytes int64
	Topo  Topo
}

func (c Call) String() string {
	return fmt.Sprintf("%s of %s on %s", c.Coll, FormatBytes(c.Bytes), c.Topo)
}

func plural(n int, w string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", w)
	}
	return fmt.Sprintf("%d %ss", n, w)
}

// Estimate is one candidate of a cost table.
type Estimate struct {
	Algo     string
	Time     time.Duration // predicted, as on one channel (Model.estimate)
	Channels int
	Segment  int64 // bytes
	// Err says why the candidate cannot serve the call or, when Excluded,
	// why HCCL_ALGO does not let it; Time is meaningless unless Excluded.
	Err      error
	Excluded bool
}

// ErrNoAlgorithm is wrapped by the errors of calls no allowed algorithm
// can serve.
var ErrNoAlgorithm = errors.New("no algorithm can serve the call")

// Table is every candidate's prediction for one call, cheapest first, and
// the choice.
type Table struct {
	Call       Call
	Policy     string
	Candidates []Estimate
	Choice     int   // index into Candidates, -1 when Err is set
	Err        error // why nothing can be chosen
}

// Chosen returns the chosen estimate.
func (t *Table) Chosen() (Estimate, error) {
	if t.Err != nil {
		return Estimate{}, t.Err
	}
	return t.Candidates[t.Choice], nil
}

// String prints the table, one candidate per line, the choice marked.
func (t *Table) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", t.Call)
	if t.Policy != "" {
		fmt.Fprintf(&b, ", HCCL_ALGO=%q", t.Policy)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  %-14s %12s %8s %9s\n", "algorithm", "predicted", "channels", "segment")
	for i, e := range t.Candidates {
		mark := " "
		if i == t.Choice {
			mark = "*"
		}
		if e.Err != nil && !e.Excluded {
			fmt.Fprintf(&b, "%s %-14s %12s  (%v)\n", mark, e.Algo, "-", e.Err)
			continue
		}
		fmt.Fprintf(&b, "%s %-14s %12s %8d %9s", mark, e.Algo, formatTime(e.Time), e.Channels, FormatBytes(e.Segment))
		if e.Excluded {
			fmt.Fprintf(&b, "  (%v)", e.Err)
		}
		b.WriteString("\n")
	}
	if t.Err != nil {
		fmt.Fprintf(&b, "  no choice: %v\n", t.Err)
	}
	return b.String()
}

func formatTime(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f us", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// Predict prices every algorithm for call under model m and policy p and
// picks the cheapest one the policy allows; for AlltoAllV, the one whose
// worst ratio to the cheapest over every size is least (vChoice). It is
// pure: the CLI prints its table for any job up to MaxRanks ranks without
// launching anything.
func Predict(m Model, p Policy, call Call) *Table {
	t := predictAt(m, p, call)
	if call.Coll != plan.AlltoAllV || t.Err != nil {
		return t
	}
	name, err := vChoice(m, p, call.Topo)
	if err != nil {
		t.Err, t.Choice = err, -1
		return t
	}
	for i, e := range t.Candidates {
		if e.Algo == name && e.Err == nil {
			t.Choice = i
		}
	}
	return t
}

// vSizes are the sizes (one rank's send buffer) over which AlltoAllV's
// one choice is made: 1 KiB to 256 MiB, by fours.
var vSizes = func() []int64 {
	var s []int64
	for b := int64(1 << 10); b <= 256<<20; b *= 4 {
		s = append(s, b)
	}
	return s
}()

// vChoice is AlltoAllV's algorithm on topology topo, whatever the call's
// counts. Every rank of an AlltoAllV knows only its own counts, and
// ranks that priced their own shares chose different algorithms for one
// call (mesh on some, ring on another), whose schedules meeting in one
// call is a deadlock or corruption waiting for the right sizes. So the
// choice is a function of what every rank knows alike, the topology, the
// model and the policy: the algorithm, of those able and allowed at
// every size, whose worst ratio to the cheapest over vSizes is least
// (ties to the registry's order). Within one server the three are within
// about 10% of each other from 1 MiB on and mesh wins below; across
// servers pairwise's worst is about 2x (at 256 MiB), ring's 5x (at 1
// KiB): docs/selector.md#one-decision-per-call.
func vChoice(m Model, p Policy, topo Topo) (string, error) {
	worst := map[string]float64{}
	var order []string
	for i, b := range vSizes {
		t := predictAt(m, p, Call{Coll: plan.AlltoAllV, Bytes: b, Topo: topo})
		if t.Err != nil {
			return "", t.Err
		}
		best := t.Candidates[t.Choice].Time
		able := map[string]bool{}
		for _, e := range t.Candidates {
			if e.Err != nil {
				continue
			}
			able[e.Algo] = true
			if i == 0 {
				order = append(order, e.Algo)
			}
			worst[e.Algo] = max(worst[e.Algo], float64(e.Time)/float64(max(best, 1)))
		}
		order = slices.DeleteFunc(order, func(n string) bool { return !able[n] })
	}
	if len(order) == 0 {
		return "", fmt.Errorf("AlltoAllV on %d ranks, %d servers: no algorithm serves every size: %w", topo.Ranks, topo.servers(), ErrNoAlgorithm)
	}
	rank := func(n string) int {
		return slices.IndexFunc(algo.All(), func(a plan.Algorithm) bool { return a.Name() == n })
	}
	slices.SortStableFunc(order, func(a, b string) int {
		switch {
		case worst[a] < worst[b]:
			return -1
		case worst[a] > worst[b]:
			return 1
		}
		return rank(a) - rank(b)
	})
	return order[0], nil
}

// predictAt is Predict at call's size alone.
func predictAt(m Model, p Policy, call Call) *Table {
	t := &Table{Call: call, Policy: p.String(), Choice: -1}
	if err := call.Topo.check(); err != nil {
		t.Err = err
		return t
	}
	if call.Topo.Ranks > MaxRanks {
		t.Err = fmt.Errorf("selector: %d ranks, at most %d", call.Topo.Ranks, MaxRanks)
		return t
	}
	if call.Bytes < 0 {
		t.Err = fmt.Errorf("selector: negative size %d", call.Bytes)
		return t
	}
	var why []string
	servers := call.Topo.servers()
	for _, a := range algo.All() {
		forced := p.forced(call.Coll, servers) && slices.Contains(p.ruleFor(call.Coll, servers).names, a.Name())
		if !algo.Serves(a, call.Coll) && !forced {
			continue // not a candidate; listed only when forced, to say why
		}
		e := m.estimate(a.Name(), call)
		if e.Err == nil {
			if ok, reason := p.allows(call.Coll, servers, a.Name()); !ok {
				e.Err, e.Excluded = errors.New(reason), true
			}
		}
		if e.Err != nil && forced {
			why = append(why, e.Err.Error())
		}
		t.Candidates = append(t.Candidates, e)
	}
	slices.SortStableFunc(t.Candidates, func(a, b Estimate) int {
		switch {
		case (a.Err == nil) != (b.Err == nil):
			if a.Err == nil {
				return -1
			}
			return 1
		case a.Excluded != b.Excluded:
			if a.Excluded {
				return -1
			}
			return 1
		case a.Err != nil && !a.Excluded:
			return 0
		}
		return int(a.Time - b.Time)
	})
	if len(t.Candidates) > 0 && t.Candidates[0].Err == nil {
		t.Choice = 0
		return t
	}
	switch {
	case p.forced(call.Coll, servers):
		t.Err = fmt.Errorf("HCCL_ALGO %q forces %s for %s: %s: %w", p.String(), p.ruleFor(call.Coll, servers), call, strings.Join(why, "; "), ErrNoAlgorithm)
	default:
		t.Err = fmt.Errorf("%s: every algorithm is excluded or unable: %w", call, ErrNoAlgorithm)
	}
	return t
}

// estimate prices one algorithm, choosing its channel count and segment.
func (m Model) estimate(name string, call Call) Estimate {
	e := Estimate{Algo: name}
	s, err := shapeWithin(name, call.Coll, call.Topo, call.Bytes, m.Scratch)
	if err != nil {
		e.Err = err
		return e
	}
	e.Channels = m.channelsFor(call, s)
	e.Segment = m.segment(s.maxOp / float64(e.Channels))
	// Priced as one channel: the gains channels measured (a tenth at
	// most, over TCP) are below what the model tells apart, and pricing
	// the links' Parallel would move algorithm choices on no evidence
	// (docs/measurements.md#channels-where-they-win).
	e.Time = m.price(s, call.Topo, 1)
	return e
}

// MaxChannelCount is the most channels a call runs on: the runtime's link
// tags hold four bits of channel.
const MaxChannelCount = 16

// Channelled reports whether the runtime runs calls of coll over several
// channels: those whose result is elementwise over one buffer
// (AllReduce, Broadcast, Reduce), which contiguous ranges of elements
// split exactly. The others run on one channel: their blocks per rank
// would have to be split alike on every rank, which the plans do not do.
func Channelled(coll plan.Coll) bool {
	return coll == plan.AllReduce || coll == plan.Broadcast || coll == plan.Reduce
}

// channelsFor is the channel count of call, whose shape is s: NCCL's rule
// (channels, up to MaxChannelCall) within the Parallel of the link classes the call uses (more
// channels than a class carries at full speed only split its bandwidth
// and add messages), then the job's bounds. Calls that are not
// Channelled get one.
func (m Model) channelsFor(call Call, s shape) int {
	if !Channelled(call.Coll) {
		return 1
	}
	par := 0
	for c := Class(0); c < numClasses; c++ {
		used := s.lat[c] > 0 || s.bytes[c] > 0
		if c == Shm && m.NoShm {
			continue // priced as the net class (terms)
		}
		if c == Net && m.NoShm {
			used = used || s.lat[Shm] > 0 || s.bytes[Shm] > 0
		}
		if used {
			par = max(par, m.Links[c].Parallel)
		}
	}
	nc := min(m.channels(call.Bytes), max(par, 1))
	if m.ChannelCeil > 0 {
		nc = min(nc, m.ChannelCeil)
	}
	if m.ChannelFloor > 0 {
		nc = max(nc, m.ChannelFloor)
	}
	// Every channel gets an element of the widest type (8 bytes), so
	// that the runtime runs what this says whatever the type.
	return max(min(nc, MaxChannelCount, int(min(call.Bytes/8, MaxChannelCount))), 1)
}

// channels is NCCL's rule: start from the most and drop channels while
// some would get less than MinChannelBytes; calls beyond MaxChannelCall
// get one.
func (m Model) channels(bytes int64) int {
	if m.MaxChannelCall > 0 && bytes > m.MaxChannelCall {
		return 1
	}
	nc := max(m.MaxChannels, 1)
	for nc > 1 && bytes < int64(nc)*m.MinChannelBytes {
		nc--
	}
	return nc
}

// segment aims at four segments per transfer, so that sends, receives
// and reductions overlap, within [MinSegment, MaxSegment] and a power of two.
func (m Model) segment(op float64) int64 {
	want := int64(op / 4)
	if want < 1 {
		want = 1
	}
	seg := int64(1) << bits.Len64(uint64(want-1))
	return min(max(seg, m.MinSegment), m.MaxSegment)
}

// price turns a shape into time on topology t with nc channels: the
// constants times the shape's terms.
func (m Model) price(s shape, t Topo, nc int) time.Duration {
	f, x := m.terms(s, t, nc), m.fitted()
	var sec float64
	for j := range f {
		sec += f[j] * x[j]
	}
	return time.Duration(sec * 1e9)
}

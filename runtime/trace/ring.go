package trace

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hcclrun/hcclrun/internal/cpu"
)

// Kind tells a call from an op.
type Kind uint8

const (
	KindCall Kind = iota + 1 // a collective, from its start to its end
	KindOp                   // one op of a step of a call
	// KindPair is a call with its ops, which follow the template
	// Ring.Ops numbered (Event.Peer) from the call's start and end: the
	// executor's pair step, an 8-byte AllReduce at np 2, recorded in one
	// event instead of four (docs/performance.md#tracing-overhead).
	KindPair
)

// Event is one record of the ring: a call or an op, 56 bytes without a
// pointer, so that recording one is a copy of one cache line and no
// work for the garbage collector. A call's algorithm and reason are a
// pair of names the ring keeps once (Ring.Name).
type Event struct {
	Kind    Kind
	Coll    uint8 // plan.Coll
	DType   uint8 // reduce.DType
	Op      uint8 // KindOp: plan.Kind
	Channel uint8
	_       uint8
	Step    int16  // KindOp: the plan step (saturated)
	Peer    int32  // KindOp: the peer, -1 for local ops; KindPair: the ops' template, Ring.Ops's
	Name    uint16 // KindCall, KindPair: the algorithm and reason, Ring.Name's
	Seq     uint64
	Bytes   int64 // KindCall: the bytes of one rank's input; KindOp: transferred, copied or reduced
	Start   int64 // the executor's TraceNow: ticks, which Fill's Line turns into ns since the file's Epoch
	End     int64
	// Extra is, of an op, the ticks it waited for the peer's first
	// frame; of a call, the selector's predicted ns (0: none).
	Extra int64
}

// Names is a call's algorithm and why it was chosen.
type Names struct{ Algo, Why string }

// maxNames bounds the pairs a ring keeps; later ones share the last.
const maxNames = 1 << 16

// When places an op of a KindPair event in its call.
type When uint8

const (
	AtStart When = iota + 1 // an instant at the call's start
	AtEnd                   // an instant at the call's end
	Waited                  // from the call's start to its end, all of it waiting for the peer
)

// PairOp is one op of a KindPair event's template: what a KindOp event
// of it would hold but for the times, which When places.
type PairOp struct {
	Op    uint8 // plan.Kind
	When  When
	Step  int16
	Peer  int32 // -1 for local ops
	Bytes int64
}

// maxTemplates bounds the templates a ring keeps: Ops refuses more.
const maxTemplates = 1 << 16

// Ring keeps the last events recorded, up to its capacity; older ones
// are overwritten and counted as dropped. Add is safe for concurrent use
// (a step's ops on workers, a call's channels) and takes no lock: each
// event claims its slot with one atomic add, a third of what a mutex
// costs, which an 8-byte collective's ops notice
// (docs/performance.md#tracing-overhead). Snapshot is meant for when no
// Add runs (Close); one taken meanwhile (a signal's) may hold an event
// half written, or miss the newest.
type Ring struct {
	ev    []Event
	total atomic.Uint64 // events ever claimed

	mu        sync.Mutex
	names     []Names
	index     map[Names]uint16
	templates [][]PairOp
	tindex    map[string]int32
}

// NewRing returns a ring of n events (at least 1), its memory touched:
// a fresh allocation of this size comes from pages the kernel maps on
// first write, about 10 us each on these machines, which the first
// calls traced would pay, an 8-byte one several times its own time.
func NewRing(n int) *Ring {
	r := &Ring{ev: make([]Event, max(n, 1)), index: map[Names]uint16{}, tindex: map[string]int32{}}
	perPage := max(4096/int(unsafe.Sizeof(Event{})), 1)
	for i := 0; i < len(r.ev); i += perPage {
		r.ev[i].Kind = KindOp
	}
	clear(r.ev)
	return r
}

// Name returns the number of the pair n, for Event.Name. It takes a lock
// and a map lookup: callers keep the last answer.
func (r *Ring) Name(n Names) uint16 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.index[n]; ok {
		return i
	}
	if len(r.names) == maxNames {
		return maxNames - 1
	}
	i := uint16(len(r.names))
	r.names = append(r.names, n)
	r.index[n] = i
	return i
}

// Ops returns the number of the template ops, for a KindPair event's
// Peer, or -1 when the ring holds maxTemplates others already (the
// caller then records the ops as KindOp events). It takes a lock and a
// map lookup: callers keep the last answer.
func (r *Ring) Ops(ops []PairOp) int32 {
	key := make([]byte, 0, 16*len(ops))
	for _, o := range ops {
		key = fmt.Appendf(key, "%d,%d,%d,%d,%d;", o.Op, o.When, o.Step, o.Peer, o.Bytes)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, ok := r.tindex[string(key)]; ok {
		return i
	}
	if len(r.templates) == maxTemplates {
		return -1
	}
	i := int32(len(r.templates))
	r.templates = append(r.templates, slices.Clone(ops))
	r.tindex[string(key)] = i
	return i
}

// Templates returns the templates Ops numbered, by number.
func (r *Ring) Templates() [][]PairOp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.templates)
}

// Slot claims the next slot and returns it, for the caller to write in
// place, for a caller that no Add or Slot runs concurrently with: the
// communicator's call once its executors are done. It claims with a
// plain load and store, not Add's locked instruction, which waits for
// every store in flight (the call's frames to its peers) to reach the
// cache: in an 8-byte AllReduce traced the locked add was a third of the
// recording's time (docs/performance.md#tracing-overhead).
func (r *Ring) Slot() *Event {
	i := r.total.Load()
	cpu.ReleaseStore64(&r.total, i+1)
	return &r.ev[i%uint64(len(r.ev))]
}

// Add records e; it is safe for concurrent use with other Adds.
func (r *Ring) Add(e *Event) {
	i := r.total.Add(1) - 1
	r.ev[i%uint64(len(r.ev))] = *e
}

// Names returns the pairs Name numbered, by number.
func (r *Ring) Names() []Names {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Names(nil), r.names...)
}

// Snapshot returns the events kept, oldest first, and how many were
// dropped to keep within the capacity.
func (r *Ring) Snapshot() (events []Event, dropped uint64) {
	total, n := r.total.Load(), uint64(len(r.ev))
	if total <= n {
		return append([]Event(nil), r.ev[:total]...), 0
	}
	start := total % n
	out := append(append(make([]Event, 0, n), r.ev[start:]...), r.ev[:start]...)
	return out, total - n
}

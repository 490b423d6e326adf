package executor

import (
	"time"

	"github.com/hcclrun/hcclrun/internal/cpu"
	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// What the executor tells the world of its progress, at two prices:
//
//   - Config.Where, a word the executor stores the op it is about to wait
//     in (step and peer, a wire.Where) into before every op that may wait
//     for a peer: a plain store, which the control plane's heartbeats
//     carry to the launcher for hcclrun status;
//   - Config.Trace, a Tracer told of every op with its times, the time
//     the op waited for its peer's first frame included (HCCL_TRACE),
//     but for a small pair plan's, which a caller that asks
//     (Call.TraceWhole) records itself in one go (PairTraced, PairOps).
//     Off, it costs a nil check per op; the times are read only when on.

// Tracer records the ops a Run ran. Op is called once per op, after it
// ended, from the goroutine that ran it: several at once when a step's
// ops run on workers, or when several executors (channels) share one
// Tracer. The op and call must not be kept.
type Tracer interface {
	// Op reports op of step, on call, with bytes transferred (or copied,
	// or reduced), times in TraceNow's ticks (ticks.go): start and end,
	// and wait, the part of them spent until the peer's first frame
	// arrived (0 for sends and local ops).
	Op(call *Call, step int, op *plan.Op, bytes int, start, end, wait int64)
}

// epoch is what Now counts from.
var epoch = time.Now()

// Epoch is the wall-clock time at which Now was 0.
func Epoch() time.Time { return epoch }

// Now is the executor's clock: monotonic nanoseconds since Epoch. It
// reads only the monotonic clock (time.Since of a time with a monotonic
// reading), the cheaper half of time.Now.
func Now() int64 { return int64(time.Since(epoch)) }

// SetTrace replaces Config.Trace (nil: off) for the Runs that follow; it
// must not be called while Run runs.
func (e *Executor) SetTrace(t Tracer) { e.trace = t }

// waiting stores where this rank waits, before an op that may wait for
// peer.
func (r *run) waiting(step, peer int) {
	if w := r.e.where; w != nil {
		cpu.ReleaseStore64(w, uint64(wire.MakeWhere(r.call.Desc.Coll, step, peer)))
	}
}

// untimedMax is the most bytes an op that does not wait (a local copy or
// reduction, a send into the link's buffer) may move and still be
// reported without a reading of the clock, as taking no time: on the KVM
// guests here a reading costs 12 ns (TraceNow), as much as such an op,
// and an 8-byte call has several (docs/performance.md#tracing-overhead).
const untimedMax = 4 << 10

// startClock starts the run's trace clock at the call's start, and
// keeps r.call.TraceWhole, which from then on says that the run reports
// no op and leaves them to the caller, only for a pair plan whose ops all
// go without a reading of the clock (untimedMax), if pairStep runs it
// straight (Run and pairStep clear it otherwise).
func (r *run) startClock(p *plan.Plan) {
	r.clock = r.call.TraceStart
	if r.clock == 0 {
		r.clock = TraceNow()
	}
	pp := &r.e.pairs
	r.call.TraceWhole = r.call.TraceWhole && pp.of(p, r.e.rank) && pp.localMax*r.call.ElemSize <= untimedMax
}

// PairTraced reports whether the last Run, which succeeded, reported none
// of its ops to Config.Trace (Call.TraceWhole) and left them to the
// caller, who records them as PairOps of its plan describes, with the
// call's start (Call.TraceStart) and end (TraceClock). An 8-byte
// AllReduce at np 2 is recorded so in one event instead of four
// (docs/performance.md#tracing-overhead).
func (e *Executor) PairTraced() bool { return e.run.call.TraceWhole }

// When places a PairOp in its call.
type When uint8

const (
	AtStart When = iota + 1 // an instant at the call's start
	AtEnd                   // an instant at the call's end
	Waited                  // from start to end, all of it waiting for the peer
)

// PairOp is an op of a call whose ops Run left to the caller
// (PairTraced): Tracer.Op would have been told of it with Step, Op and
// Bytes, and times placed by When.
type PairOp struct {
	Step  int
	Op    *plan.Op
	Bytes int
	When  When
}

// PairOps appends to dst the ops of pair plan p (PairTraced) run with
// elements of elemSize bytes, in the order Tracer.Op would have been told
// of them: pairStep sends into the link's buffer at the start, runs the
// first step's local ops, receives until the end, and the later steps'
// local ops take no time (untimedMax).
func PairOps(dst []PairOp, p *plan.Plan, elemSize int) []PairOp {
	if len(p.Steps) == 0 {
		return dst
	}
	var send, recv PairOp
	for i := range p.Steps[0].Ops {
		op := &p.Steps[0].Ops[i]
		switch op.Kind {
		case plan.OpSend:
			send = PairOp{Op: op, Bytes: op.Src.Len * elemSize, When: AtStart}
		case plan.OpRecv, plan.OpRecvReduce:
			recv = PairOp{Op: op, Bytes: op.Dst.Len * elemSize, When: Waited}
		default:
			dst = append(dst, PairOp{Op: op, Bytes: op.Dst.Len * elemSize, When: AtStart})
		}
	}
	dst = append(dst, send, recv)
	for i := 1; i < len(p.Steps); i++ {
		for j := range p.Steps[i].Ops {
			op := &p.Steps[i].Ops[j]
			dst = append(dst, PairOp{Step: i, Op: op, Bytes: op.Dst.Len * elemSize, When: AtEnd})
		}
	}
	return dst
}

// TraceClock is the last reading of TraceNow by the last Run (with
// Config.Trace): when its last op ended, which the caller may take as
// the call's end instead of reading the clock again.
func (e *Executor) TraceClock() int64 { return e.clock }

// opBytes is what op t moved.
func opBytes(t *task) int {
	if t.op.Kind == plan.OpSend {
		return len(t.src)
	}
	return len(t.dst)
}

// tracedInline reports an op that ran on the calling goroutine without
// waiting, from start; small ones take no time (untimedMax).
func (r *run) tracedInline(t *task, start int64) {
	if r.call.TraceWhole {
		return
	}
	n, end := opBytes(t), start
	if n > untimedMax {
		end = TraceNow()
		r.clock = end
	}
	r.e.trace.Op(&r.call, t.index, t.op, n, start, end, 0)
}

// polling marks the tasks takeArrived polls for: their ops start with
// the poll, and a receive's wait includes it.
func (r *run) polling(tasks []*task) {
	for _, t := range tasks {
		t.polled = r.clock
	}
}

// execStart starts the trace of an op exec runs: now, or when the poll
// for it began.
func (r *run) execStart(t *task) {
	t.start, t.waited = t.polled, 0
	if t.start == 0 {
		t.start = TraceNow()
	}
}

// tracedWaited reports an op that exec ran, on the calling goroutine or
// a worker, from t.start until now.
func (r *run) tracedWaited(t *task) {
	r.e.trace.Op(&r.call, t.index, t.op, opBytes(t), t.start, TraceNow(), t.waited)
}

// tracePair reports a pair step's send and receive; its local ops were
// reported by localOps. The send went into the link's buffer without
// waiting (at most pairMax bytes): it is reported as taking no time, at
// the step's start. The receive runs from the start until now, all of
// it counted as waiting: the payload it copies is as small.
func (r *run) tracePair(pp *pairPlan, src []byte, start int64) {
	tr := r.e.trace
	end := TraceNow()
	r.clock = end
	if r.call.TraceWhole {
		return
	}
	tr.Op(&r.call, 0, pp.send, len(src), start, start, 0)
	tr.Op(&r.call, 0, pp.recv, len(pp.recvTask.dst), start, end, end-start)
}

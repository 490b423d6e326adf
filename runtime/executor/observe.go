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
//     the op waited for its peer's first frame included (HCCL_TRACE).
//     Off, it costs a nil check per op; the times are read only when on.

// Tracer records the ops a Run ran. Op is called once per op, after it
// ended, from the goroutine that ran it: several at once when a step's
// ops run on workers, or when several executors (channels) share one
// Tracer. The op and call must not be kept.
type Tracer interface {
	// Op reports op of step, on call, with bytes transferred (or copied,
	// or reduced), times in Now's nanoseconds: start and end, and wait,
	// the part of them spent until the peer's first frame arrived (0 for
	// sends and local ops).
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

// waiting stores where this rank waits, before an op that may wait for
// peer.
func (r *run) waiting(step, peer int) {
	if w := r.e.where; w != nil {
		cpu.ReleaseStore64(w, uint64(wire.MakeWhere(r.call.Desc.Coll, step, peer)))
	}
}

// traced reports an op that ran from start until now to the tracer.
func (r *run) traced(t *task, start, wait int64) {
	n := len(t.dst)
	if t.op.Kind == plan.OpSend {
		n = len(t.src)
	}
	r.e.trace.Op(&r.call, t.index, t.op, n, start, Now(), wait)
}

// tracePair reports a pair step's send (from start until sent) and
// receive (from sent until now, waiting until arrived); its local ops
// were reported by localOps.
func (r *run) tracePair(pp *pairPlan, src []byte, start, sent, arrived int64) {
	tr := r.e.trace
	tr.Op(&r.call, 0, pp.send, len(src), start, sent, 0)
	tr.Op(&r.call, 0, pp.recv, len(pp.recvTask.dst), sent, Now(), arrived-sent)
}

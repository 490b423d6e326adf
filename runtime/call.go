package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// call is one validated collective call, ready to plan and run.
type call struct {
	req      plan.Request
	dtype    reduce.DType
	op       ReduceOp
	reduces  bool // op is meaningful
	send     []byte
	recv     []byte
	avgSlice []byte // the part of recv that Avg divides at the end

	// Point-to-point calls bring their own one-op plan and a sequence
	// number of their own (per peer and direction), since the other ranks
	// do not take part.
	p2pPlan *plan.Plan
	p2pSeq  uint64
}

// invalid reports bad arguments of a call before anything was sent, so the
// communicator stays usable.
func (c *Comm) invalid(coll plan.Coll, format string, args ...any) error {
	return &OpError{Op: coll.String(), Rank: c.job.Rank, Peer: -1, Step: -1,
		Err: fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))}
}

// checkOp validates op for dtype.
func (c *Comm) checkOp(coll plan.Coll, dtype reduce.DType, op ReduceOp) error {
	if _, ok := op.kernelOp(); !ok {
		return c.invalid(coll, "unknown reduction operator %d", int(op))
	}
	if op == Avg && !dtype.IsFloat() {
		return c.invalid(coll, "Avg needs a floating element type, not %s", dtype)
	}
	return nil
}

// run plans a call and executes it: the one road of every collective.
func (c *Comm) run(ctx context.Context, a *call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(a.req.Coll.String()); err != nil {
		return err
	}
	return c.runLocked(ctx, a)
}

// usable fails a call named op on a closed or broken communicator; under
// c.mu.
func (c *Comm) usable(op string) error {
	if c.closed.Load() {
		return &OpError{Op: op, Rank: c.job.Rank, Peer: -1, Step: -1, Err: ErrClosed}
	}
	if err := c.brokenNow(); err != nil {
		return &OpError{Op: op, Rank: c.job.Rank, Peer: -1, Step: -1, Err: err}
	}
	return nil
}

// runLocked is run once c.mu is held and the communicator is usable; the
// communicator's own calls (posttune.go) enter here.
func (c *Comm) runLocked(ctx context.Context, a *call) error {
	a.req.Rank, a.req.Size = c.job.Rank, c.job.Size
	p, sp, ec, err := c.prepare(a)
	if err != nil {
		return err
	}
	return c.runPlanned(ctx, a, p, sp, ec)
}

// runPlanned executes call a with the plan, cut and executor call that
// prepare made for it, now or earlier (a compiled graph's: graph.go).
func (c *Comm) runPlanned(ctx context.Context, a *call, p *plan.Plan, sp *split, ec executor.Call) error {
	coll := a.req.Coll
	algoName := p.Algo
	if coll == plan.SendRecv {
		ec.Seq = a.p2pSeq
	} else {
		c.seq++
		ec.Seq = c.seq
	}

	var way postDecision
	if block := a.req.Count * a.dtype.Size(); c.knobs.tunesPost(coll, block) {
		way = c.postTuner.choose(coll, a.req.InPlace, block, c.warmLinks)
		ec.Post = way.post
	}
	var start time.Time
	if way.timed {
		start = time.Now()
	}
	if o := c.obs; o != nil && !c.warming {
		ec.TraceStart, ec.TraceWhole = o.start(), sp == nil || sp.n <= 1
		err := c.execute(ctx, a, p, sp, ec)
		o.called(c, a, p, sp, &ec, err) // trace.go
		if err != nil {
			return err
		}
	} else if err := c.execute(ctx, a, p, sp, ec); err != nil {
		return err
	}
	if way.timed {
		c.postTuner.record(way, time.Since(start))
	}
	if way.settles {
		if err := c.settlePost(ctx, way.key); err != nil {
			return err
		}
	}
	if a.reduces && a.op == Avg && len(a.avgSlice) > 0 {
		if err := reduce.Divide(a.dtype, a.avgSlice, c.job.Size); err != nil {
			return &OpError{Op: coll.String(), Algo: algoName, Rank: c.job.Rank, Peer: -1, Step: -1, Err: err}
		}
	}
	return nil
}

// prepare returns the plan of a, its cut over channels (nil for a call
// that brings its plan) and the executor's description of it, but for
// the sequence number: the last call's again when a repeats it
// (repeat.go).
func (c *Comm) prepare(a *call) (*plan.Plan, *split, executor.Call, error) {
	key, keyed := keyOf(a)
	if keyed && c.repeats(a, key) {
		return c.last.plan, &c.last.split, c.last.ec, nil
	}
	var sp split
	p, err := c.planFor(a, &sp)
	if err != nil {
		return nil, nil, executor.Call{}, err
	}
	coll := a.req.Coll
	ec := executor.Call{
		Desc:     wire.Call{Coll: uint8(coll), DType: uint8(a.dtype), Root: -1, Count: uint64(a.req.Count)},
		ElemSize: a.dtype.Size(),
		Post:     c.knobs.shmDirect().posts(coll),
		Segment:  sp.seg,
	}
	if coll == plan.Broadcast || coll == plan.Reduce {
		ec.Desc.Root = int32(a.req.Root)
	}
	if a.reduces {
		kop, _ := a.op.kernelOp()
		ec.Desc.Op = uint8(kop)
		if ec.Kernel, err = kernelFor(a, kop); err != nil {
			return nil, nil, executor.Call{}, &OpError{Op: coll.String(), Algo: p.Algo, Rank: c.job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %w", ErrInvalidArgument, err)}
		}
	}
	if !keyed {
		return p, nil, ec, nil
	}
	c.last = lastCall{key: key, plan: p, split: sp, ec: ec}
	return p, &c.last.split, ec, nil
}

// streamMin is the smallest input, in bytes of one rank's send buffer,
// whose reductions store their results around the cache
// (reduce.StreamKernel): far beyond the caches an ordinary store first
// reads each line of a destination that is not an input, a third of an
// out-of-place reduction's memory traffic, while below it the next step
// still finds the result in the cache
// (docs/measurements.md#streaming-reductions-from-32-mib).
const streamMin = 32 << 20

// kernelFor returns the reduction kernel of call a with operation op: the
// streaming one for inputs of streamMin bytes and more.
func kernelFor(a *call, op reduce.Op) (func(dst, a, b []byte), error) {
	input := a.req.Count * a.dtype.Size()
	if a.req.Coll == plan.ReduceScatter {
		input *= a.req.Size
	}
	if input >= streamMin {
		return reduce.StreamKernel(a.dtype, op)
	}
	return reduce.Kernel(a.dtype, op)
}

// planFor returns the plan of a, chosen, built and cached, and, but for a
// call that brings its plan, cuts a over the channels the selector chose
// into sp (channels.go); the plan returned is channel 0's.
func (c *Comm) planFor(a *call, sp *split) (*plan.Plan, error) {
	if a.p2pPlan != nil {
		return a.p2pPlan, nil
	}
	coll := a.req.Coll
	choice, err := c.chooseAlgorithm(&a.req, a.dtype.Size())
	if err != nil {
		return nil, &OpError{Op: coll.String(), Rank: c.job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %w", ErrInvalidArgument, err)}
	}
	sp.seg = int(min(choice.Segment, 1<<30))
	if err := c.cut(a, choice.Algo, choice.Channels, sp); err != nil {
		return nil, &OpError{Op: coll.String(), Algo: choice.Algo.Name(), Rank: c.job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %w", ErrInvalidArgument, err)}
	}
	return sp.plans[0], nil
}

// current is what the failure paths that fire while a collective runs (a
// failing op, the exec timer) need to know of it: copies of a few fields
// of the call, whose pointer kept here would move every call to the heap.
type current struct {
	coll       plan.Coll
	recvCounts []int // AlltoAllV's, for a mismatch's message
	algo       string
	ctx        context.Context
	failed     atomic.Pointer[OpError] // the first failure, once reported
}

// execute runs plan p of call a, on the channels of sp when it has
// several, bounded by HCCL_EXEC_TIMEOUT, and reports
// the rank's progress to the control plane (which tells STUCK from LOST
// ranks when a peer times out).
func (c *Comm) execute(ctx context.Context, a *call, p *plan.Plan, sp *split, ec executor.Call) error {
	cur := &c.cur
	cur.coll, cur.recvCounts, cur.algo, cur.ctx = a.req.Coll, a.req.RecvCounts, p.Algo, ctx
	if cur.failed.Load() != nil {
		cur.failed.Store(nil) // only after a failure: a store is a locked instruction
	}
	collective := a.req.Coll != plan.SendRecv
	if collective && c.reportsProgress() {
		c.ctl.SetProgress(ec.Seq, true)
		defer c.ctl.SetProgress(ec.Seq, false)
	}
	if c.knobs.ExecTimeout > 0 {
		c.armTimer(ec.Seq, ec.Desc)
		defer c.disarmTimer()
	}
	var err error
	if sp != nil && sp.n > 1 {
		err = c.runChannels(ctx, a, sp, ec)
	} else {
		err = c.exec.Run(ctx, p, ec, executor.Buffers{Send: a.send, Recv: a.recv})
	}
	if err == nil {
		return nil
	}
	c.fail(err)
	if c.obs != nil {
		c.obs.failed(c) // trace.go
	}
	return cur.failed.Load()
}

// fail records the running call's first failure as an *OpError and aborts
// the job: after a failure on the data plane the links' contents are
// undefined, and peers blocked on this rank must not wait for ever. It is
// called by the executor as soon as an op fails (other ops of the step may
// still be blocked: closing the links frees them), by the exec timer, and
// after the executor returns.
func (c *Comm) fail(err error) {
	cur := &c.cur
	if cur.failed.Load() != nil {
		return
	}
	oe := c.describe(err)
	if !cur.failed.CompareAndSwap(nil, oe) {
		return
	}
	if !errors.Is(oe, ErrAborted) || c.brokenErr() == nil {
		c.abortJob(oe)
	}
}

// describe turns an executor error into the running call's *OpError.
func (c *Comm) describe(err error) *OpError {
	cur := &c.cur
	oe := &OpError{Op: cur.coll.String(), Algo: cur.algo, Rank: c.job.Rank, Peer: -1, Step: -1}
	var (
		mm *executor.MismatchError
		le *executor.LinkError
		te *timeoutError
	)
	if errors.As(err, &le) {
		oe.Peer, oe.Step = le.Peer, le.Step
	}
	switch {
	case errors.As(err, &te):
		oe.Err = err
	case errors.As(err, &mm):
		oe.Peer = mm.Peer
		if cur.coll == plan.AlltoAllV && mm.SameCall() {
			oe.Err = fmt.Errorf("%w: rank %d expects %d elements from rank %d, but rank %d sends a different count (%w)",
				ErrMismatch, c.job.Rank, cur.recvCounts[mm.Peer], mm.Peer, mm.Peer, err)
		} else {
			oe.Err = fmt.Errorf("%w: %w", ErrMismatch, err)
		}
	case cur.ctx.Err() != nil:
		oe.Err = fmt.Errorf("%w: %w", cur.ctx.Err(), err)
	default:
		// A link failed: a peer died, or the job was aborted and the links
		// closed. Give the control plane a moment to say which: its abort
		// names the cause, the link error only its echo.
		if c.brokenErr() == nil {
			// watchDone, not the control client's Done: the watcher
			// records the abort's reason and only then finishes.
			select {
			case <-c.watchDone:
			case <-time.After(abortGrace):
			}
		}
		if broken := c.brokenErr(); broken != nil {
			// The link error is the abort's echo (links closed under
			// this op); Peer and Step still say where it hit.
			oe.Err = broken
		} else {
			oe.Err = fmt.Errorf("%w: %w", ErrAborted, err)
		}
	}
	return oe
}

// abortGrace is how long a rank whose link failed waits for the control
// plane's abort that explains it.
const abortGrace = 200 * time.Millisecond

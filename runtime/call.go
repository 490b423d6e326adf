package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hcclrun/hcclrun/netio"
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
	coll := a.req.Coll
	if c.closed.Load() {
		return &OpError{Op: coll.String(), Rank: c.job.Rank, Peer: -1, Step: -1, Err: ErrClosed}
	}
	if err := c.brokenErr(); err != nil {
		return &OpError{Op: coll.String(), Rank: c.job.Rank, Peer: -1, Step: -1, Err: err}
	}
	a.req.Rank, a.req.Size = c.job.Rank, c.job.Size

	p, err := c.planFor(a)
	if err != nil {
		return err
	}
	algoName := p.Algo

	ec := executor.Call{
		Desc:     netio.Call{Coll: uint8(coll), DType: uint8(a.dtype), Root: -1, Count: uint64(a.req.Count)},
		ElemSize: a.dtype.Size(),
	}
	if coll == plan.Broadcast || coll == plan.Reduce {
		ec.Desc.Root = int32(a.req.Root)
	}
	if a.reduces {
		kop, _ := a.op.kernelOp()
		ec.Desc.Op = uint8(kop)
		if ec.Kernel, err = reduce.Kernel(a.dtype, kop); err != nil {
			return &OpError{Op: coll.String(), Algo: algoName, Rank: c.job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %v", ErrInvalidArgument, err)}
		}
	}
	if coll == plan.SendRecv {
		ec.Seq = a.p2pSeq
	} else {
		c.seq++
		ec.Seq = c.seq
	}

	runCtx := ctx
	if c.knobs.ExecTimeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.knobs.ExecTimeout)
		defer cancel()
	}
	if err := c.exec.Run(runCtx, p, ec, executor.Buffers{Send: a.send, Recv: a.recv}); err != nil {
		return c.failed(ctx, a, algoName, ec, err)
	}
	if a.reduces && a.op == Avg && len(a.avgSlice) > 0 {
		if err := reduce.Divide(a.dtype, a.avgSlice, c.job.Size); err != nil {
			return &OpError{Op: coll.String(), Algo: algoName, Rank: c.job.Rank, Peer: -1, Step: -1, Err: err}
		}
	}
	return nil
}

// planFor returns the plan of a: chosen, built and cached.
func (c *Comm) planFor(a *call) (*plan.Plan, error) {
	if a.p2pPlan != nil {
		return a.p2pPlan, nil
	}
	coll := a.req.Coll
	alg, err := c.chooseAlgorithm(&a.req, a.dtype.Size())
	if err != nil {
		return nil, &OpError{Op: coll.String(), Rank: c.job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %v", ErrInvalidArgument, err)}
	}
	p, err := c.plans.get(alg, &a.req)
	if err != nil {
		return nil, &OpError{Op: coll.String(), Algo: alg.Name(), Rank: c.job.Rank, Peer: -1, Step: -1, Err: fmt.Errorf("%w: %v", ErrInvalidArgument, err)}
	}
	return p, nil
}

// failed turns an executor error into the call's *OpError and aborts the
// job: after a failure on the data plane the links' contents are undefined,
// and peers blocked on this rank must not wait for ever.
func (c *Comm) failed(ctx context.Context, a *call, algo string, ec executor.Call, err error) error {
	oe := &OpError{Op: a.req.Coll.String(), Algo: algo, Rank: c.job.Rank, Peer: -1, Step: -1}
	var (
		mm *executor.MismatchError
		le *executor.LinkError
	)
	if errors.As(err, &le) {
		oe.Peer, oe.Step = le.Peer, le.Step
	}
	switch {
	case errors.As(err, &mm):
		oe.Peer = mm.Peer
		if a.req.Coll == plan.AlltoAllV && mm.SameCall() {
			oe.Err = fmt.Errorf("%w: rank %d expects %d elements from rank %d, but rank %d sends a different count (%v)",
				ErrMismatch, c.job.Rank, a.req.RecvCounts[mm.Peer], mm.Peer, mm.Peer, err)
		} else {
			oe.Err = fmt.Errorf("%w: %v", ErrMismatch, err)
		}
	case c.brokenErr() != nil:
		// The job was aborted while we ran: that is the cause, the link
		// error only its echo.
		oe.Err = fmt.Errorf("%w (while %v)", c.brokenErr(), err)
		return oe
	case ctx.Err() != nil:
		oe.Err = fmt.Errorf("%w: %v", ctx.Err(), err)
	case errors.Is(err, context.DeadlineExceeded):
		oe.Err = fmt.Errorf("%w: %s did not finish within HCCL_EXEC_TIMEOUT=%v: %v",
			ErrTimeout, executor.DescribeCall(ec.Seq, ec.Desc), c.knobs.ExecTimeout.Round(time.Millisecond), err)
	default:
		oe.Err = fmt.Errorf("%w: %v", ErrAborted, err)
	}
	c.abortJob(oe)
	return oe
}

package runtime

import (
	"context"
	"fmt"
	"strings"

	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Executable is a compiled graph. Run replays it; it is not safe for
// concurrent use, and runs on its communicator in order with the
// communicator's other calls, as the collectives do: a replay holds the
// communicator from its first collective to its last.
type Executable struct {
	c       *Comm
	steps   []graphStep
	staging []byte
	nodesIn int
	merged  int   // ReduceScatter and AllGather pairs made AllReduces
	groups  []int // the sizes of the fused groups
}

// graphStep is one collective of a replay: a recorded call, or a fused
// AllReduce over staging whose parts are copied in before and out after,
// then the blocks of merged pairs copied out, bound to its plan.
type graphStep struct {
	a     call
	parts []fusedPart
	block []blockCopy
	bound boundPlan
}

type fusedPart struct {
	send, recv []byte
	off        int // in staging, bytes
}

// boundPlan is what prepare made of a step's call at Compile: its plan,
// cut over channels and executor call, for the policy in force then
// (Comm.policyGen).
type boundPlan struct {
	plan  *plan.Plan
	split split
	ec    executor.Call
	// choice is the selector's answer the plan follows, which the trace
	// reads as the last one (trace.go, called).
	choice choiceMade
	gen    uint64
	ok     bool
}

// bind prepares step s's call; under c.mu. An AlltoAllV is left
// unbound: its counts are read at each replay, and its plan with them.
func (c *Comm) bind(s *graphStep) error {
	a := &s.a
	a.req.Rank, a.req.Size = c.job.Rank, c.job.Size
	if a.req.Coll == plan.AlltoAllV {
		return nil
	}
	p, sp, ec, err := c.prepare(a)
	if err != nil {
		return err
	}
	// prepare may have reused the last call's plan without asking the
	// selector, whose last answer is then another call's.
	req := a.req
	if _, err := c.chooseAlgorithm(&req, a.dtype.Size()); err != nil {
		return err
	}
	s.bound = boundPlan{plan: p, split: *sp, ec: ec, choice: c.lastChoice, gen: c.policyGen, ok: true}
	return nil
}

// Run replays the graph: every rank must run it, as it would make the
// calls. Buffers are read and written as they are at the time of the run.
func (e *Executable) Run(ctx context.Context) error {
	c := e.c
	if c == nil {
		return &OpError{Op: "Graph", Rank: -1, Peer: -1, Step: -1, Err: ErrClosed}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range e.steps {
		s := &e.steps[i]
		if err := c.usable(s.a.req.Coll.String()); err != nil {
			return err
		}
		for _, p := range s.parts {
			copy(e.staging[p.off:], p.send)
		}
		if err := c.runStep(ctx, s); err != nil {
			return err
		}
		for _, p := range s.parts {
			copy(p.recv, e.staging[p.off:p.off+len(p.recv)])
		}
		for _, b := range s.block {
			copy(b.dst, b.src)
		}
	}
	return nil
}

// runStep runs step s with its bound plan, bound again after SetAlgo or
// SetChannels changed the policy; under c.mu.
func (c *Comm) runStep(ctx context.Context, s *graphStep) error {
	b := &s.bound
	if b.ok && b.gen != c.policyGen {
		if err := c.bind(s); err != nil {
			return err
		}
	}
	if !b.ok {
		return c.runLocked(ctx, &s.a)
	}
	c.lastChoice = b.choice
	return c.runPlanned(ctx, &s.a, b.plan, &b.split, b.ec)
}

// Steps returns the number of collectives a replay makes (after fusion).
func (e *Executable) Steps() int { return len(e.steps) }

// Close releases the staging buffers; Run then fails with ErrClosed. It
// does not close the communicator.
func (e *Executable) Close() error {
	e.c, e.steps, e.staging = nil, nil, nil
	return nil
}

// logPlan logs the compiled plan at INFO: nodes in and out, the pairs
// merged, the fused groups and each step's algorithm.
func (e *Executable) logPlan() {
	var algos []string // a run of steps alike as one entry, "AllReduce:ring*64"
	last, run := "", 0
	flush := func() {
		if run > 1 {
			last += fmt.Sprintf("*%d", run)
		}
		if run > 0 {
			algos = append(algos, last)
		}
	}
	for i := range e.steps {
		s := &e.steps[i]
		name := "per call"
		if s.bound.ok {
			name = s.bound.plan.Algo
		}
		if step := fmt.Sprintf("%s:%s", s.a.req.Coll, name); step != last {
			flush()
			last, run = step, 0
		}
		run++
	}
	flush()
	e.c.log.Info("graph compiled", "nodes_in", e.nodesIn, "nodes_out", len(e.steps),
		"merged_scatter_gathers", e.merged, "fused_groups", fmt.Sprint(e.groups),
		"staging_bytes", len(e.staging), "algorithms", strings.Join(algos, " "))
}

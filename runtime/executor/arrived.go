package executor

import (
	"context"
	"time"

	"github.com/hcclrun/hcclrun/internal/cpu"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// A step of several small receives (a one-shot AllReduce, a mesh
// exchange or Barrier, a Broadcast's first step with its call check) used
// to give every receive but the first a worker goroutine, each of which
// then spun, yielded and slept on its own link. Where the receives are
// small and the links can say whether a frame has arrived
// (transport.Arriver), the calling goroutine instead polls them all and
// takes each as it comes, and hands to workers only what is still missing
// after the poll. On a host with more ranks than cores the workers were a
// cost of their own: the ranks' time went to the Go scheduler's hand-offs
// between three goroutines per process, on top of the context switches
// between the processes (docs/measurements.md#small-receives-polled-by-the-caller).

// Poll says how long the calling goroutine of a step polls the step's
// small receives before it hands those still missing to workers: Spin
// looking, with Relax (when set) between looks and every few looks
// letting the process's other goroutines run, then Yield more with
// YieldProcessor (which gives the processor to other processes) called
// between looks. The zero Poll looks once.
type Poll struct {
	Spin, Yield    time.Duration
	Relax          func() // a CPU's spin-wait hint (cpu.Pause)
	YieldProcessor func()
}

// arrival is what takeArrived can do with a task.
type arrival int

const (
	arrivedWhole arrival = iota // a receive that can run now without waiting
	notYet                      // a small receive whose frame has not arrived
	needsWaiting                // anything else: it may wait on a peer
)

// takeArrived runs on the calling goroutine the receives whose whole
// transfer has arrived, as one frame, and polls for the others while every
// task left is a receive that one frame will complete. It returns the
// tasks left, for runTasks. Nothing it runs can wait, so no order of
// taking can deadlock; what might wait it leaves to runTasks, which runs
// every task left at once as before.
func (r *run) takeArrived(ctx context.Context, tasks []*task) ([]*task, error) {
	for _, t := range tasks {
		// Once per step: the manager's lookup takes a lock.
		t.arriver = nil
		if t.op.Kind == plan.OpRecv || t.op.Kind == plan.OpRecvReduce {
			t.arriver, _ = r.e.links.Open(t.op.Peer).(transport.Arriver)
		}
	}
	if r.e.trace != nil {
		r.polling(tasks) // observe.go
	}
	poll := r.e.poll
	var start time.Time
	for i := 0; ; i++ {
		left, pollable := tasks[:0], true
		for _, t := range tasks {
			switch arrivalOf(t, r.segment(0, len(t.dst))) {
			case arrivedWhole:
				if err := r.exec(ctx, t); err != nil {
					return nil, err
				}
			case notYet:
				left = append(left, t)
			case needsWaiting:
				left, pollable = append(left, t), false
			}
		}
		tasks = left
		if len(tasks) == 0 || !pollable {
			return tasks, nil
		}
		if i == 0 {
			start = time.Now()
		}
		// Between looks: the Go scheduler only now and then (each
		// Gosched takes its lock), the processor at every look once
		// the spin is over, which is a system call anyway.
		if i&7 == 7 {
			if ctx.Err() != nil {
				return tasks, nil // the workers' waits report it
			}
			cpu.YieldGoroutine()
		}
		switch waited := time.Since(start); {
		case waited < poll.Spin:
			if poll.Relax != nil {
				poll.Relax()
			}
		case waited < poll.Spin+poll.Yield && poll.YieldProcessor != nil:
			poll.YieldProcessor()
		default:
			return tasks, nil
		}
	}
}

// arrivalOf classifies t for takeArrived; seg is the length of its first
// segment.
func arrivalOf(t *task, seg int) arrival {
	if t.arriver == nil {
		return needsWaiting
	}
	switch n, ok := t.arriver.Arrived(); {
	case ok && (n == len(t.dst) || n < 0):
		// The transfer in one frame, or a read that fails at once.
		return arrivedWhole
	case ok:
		// Part of a longer transfer, or a frame exec will reject.
		return needsWaiting
	case seg == len(t.dst):
		return notYet
	}
	return needsWaiting
}

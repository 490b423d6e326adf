package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/netio/control"
	"github.com/hcclrun/hcclrun/runtime/executor"
)

// HCCL_EXEC_TIMEOUT bounds every collective. One timer per communicator,
// re-armed per call, so that the bound costs no allocation. When it fires,
// the rank asks the control plane where every rank is and names the ranks
// that have not arrived, telling STUCK (alive, not progressing) from LOST
// (silent), then aborts the job like any other failure.

// execTimer is the communicator's exec-timeout timer.
type execTimer struct {
	mu    sync.Mutex
	t     *time.Timer
	seq   uint64     // the call it is armed for
	desc  netio.Call // and its descriptor
	armed bool
}

// timeoutError is the error of a call that exceeded HCCL_EXEC_TIMEOUT.
type timeoutError struct {
	call       string
	after      time.Duration
	stragglers string
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%s did not finish within HCCL_EXEC_TIMEOUT=%v: %s", e.call, e.after, e.stragglers)
}

func (e *timeoutError) Unwrap() error { return ErrTimeout }

func (c *Comm) armTimer(seq uint64, desc netio.Call) {
	et := &c.timer
	et.mu.Lock()
	defer et.mu.Unlock()
	et.seq, et.desc, et.armed = seq, desc, true
	if et.t == nil {
		et.t = time.AfterFunc(c.knobs.ExecTimeout, c.execTimedOut)
		return
	}
	et.t.Reset(c.knobs.ExecTimeout)
}

func (c *Comm) disarmTimer() {
	et := &c.timer
	et.mu.Lock()
	et.armed = false
	et.t.Stop()
	et.mu.Unlock()
}

// execTimedOut runs on the timer's goroutine.
func (c *Comm) execTimedOut() {
	et := &c.timer
	et.mu.Lock()
	seq, call, armed := et.seq, et.desc, et.armed
	et.mu.Unlock()
	if !armed {
		return // the call finished as the timer fired
	}
	desc := executor.DescribeCall(seq, call)
	who := "the control plane could not say which ranks are behind"
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := c.ctl.Status(ctx)
	switch {
	case err == nil:
		who = control.FormatStragglers(control.Stragglers(st, seq, c.ctl.Heartbeat()))
	case c.brokenErr() != nil:
		// Another rank timed out (or failed) first and aborted the job:
		// that is the news, not this rank's timer.
		c.fail(c.brokenErr())
		return
	}
	c.fail(&timeoutError{call: desc, after: c.knobs.ExecTimeout, stragglers: who})
}

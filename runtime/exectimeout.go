package runtime

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
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
	seq   uint64    // the call it is armed for
	desc  wire.Call // and its descriptor
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

func (c *Comm) armTimer(seq uint64, desc wire.Call) {
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

// statusAbortWait bounds how long a timed-out rank whose status query
// failed waits for the abort that explains the failure.
const statusAbortWait = time.Second

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
	if err != nil && c.brokenErr() == nil {
		// The status query fails when the job was just aborted (another
		// rank timed out first): wait for the abort to be recorded. It is
		// on its way on the same connection, so only a starved host takes
		// long; a lost control plane ends the wait as well.
		select {
		case <-c.watchDone:
		case <-time.After(statusAbortWait):
		}
	}
	switch {
	case err == nil && !c.reportsProgress():
		who = c.childStragglers(st) // split.go
	case err == nil:
		who = explainTimeout(st, seq, c.ctl.Heartbeat())
	case c.brokenErr() != nil:
		// Another rank timed out (or failed) first and aborted the job:
		// that is the news, not this rank's timer.
		c.fail(c.brokenErr())
		return
	}
	c.fail(&timeoutError{call: desc, after: c.knobs.ExecTimeout, stragglers: who})
}

// explainTimeout names the ranks that hold call seq up: those that have
// not arrived (STUCK or LOST), or, when every rank has arrived, those still
// inside the call, the most silent first (a rank stopped inside the call
// has arrived, yet it is the one everybody waits for).
func explainTimeout(st []control.RankStatus, seq uint64, heartbeat time.Duration) string {
	if s := control.Stragglers(st, seq, heartbeat); len(s) > 0 {
		return control.FormatStragglers(s)
	}
	var inside []control.RankStatus
	for _, r := range st {
		if r.Seq == seq && r.InCall {
			inside = append(inside, r)
		}
	}
	if len(inside) == 0 {
		return "every rank has arrived and none reports being inside the call"
	}
	slices.SortStableFunc(inside, func(a, b control.RankStatus) int { return cmp.Compare(b.SilentFor, a.SilentFor) })
	var b strings.Builder
	b.WriteString("every rank has arrived; still inside the call:")
	for i, r := range inside {
		if i == 8 {
			fmt.Fprintf(&b, " and %d more", len(inside)-i)
			break
		}
		fmt.Fprintf(&b, " rank %d (silent for %v)", r.Rank, r.SilentFor.Round(10*time.Millisecond))
		if i < len(inside)-1 && i < 7 {
			b.WriteString(",")
		}
	}
	return b.String()
}

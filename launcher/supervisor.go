package launcher

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// lostWindow is how long a rank whose control connection dropped (or that
// aborted the job itself) may take to exit before that counts as its
// failure. A crashing rank's socket closes a moment before its exit is
// reaped, and a rank that aborts usually exits next; the exit status is the
// better summary.
const lostWindow = 500 * time.Millisecond

// rankState is the supervisor's view of one rank.
type rankState int

const (
	pending  rankState = iota // not started yet, or Start in flight
	running                   // started, not yet reaped
	finished                  // reaped (or never started because of teardown)
)

type startedMsg struct {
	rank int
	proc Process
	err  error
}

type exitedMsg struct {
	rank   int
	status ExitStatus
	err    error
}

// supervisor owns the state of a running job. Every field is touched by the
// goroutine of run only; the starters and waiters talk to it by messages.
type supervisor struct {
	r          *resolved
	ctl        controlPlane
	tablePaths []string
	mux        *outputMux

	state    []rankState
	procs    []Process
	statuses []ExitStatus     // of finished ranks
	writers  [][2]*lineWriter // stdout, stderr per rank
	left     int              // ranks not yet finished

	started chan startedMsg
	exited  chan exitedMsg
	lostDue chan int             // a flagged rank's window has passed
	broken  chan error           // the launcher's stdout or stderr failed
	flagged map[int]controlEvent // ranks the control plane reported lost or aborting
	flagSeq int                  // events flagged so far

	// Exits with code 0 against the control plane's news (farewell.go).
	view         []ctlView    // by rank
	anyJoined    bool         // some rank joined the job
	waitingLeave map[int]bool // exited 0 after joining; their left or lost is awaited
	unseen       map[int]bool // exited 0, not seen joining, within joinWindow
	neverJoined  []int        // exited 0 and never joined, in the order settled
	joinDue      chan int     // an unseen rank's window has passed

	// Teardown.
	result     error          // what Run returns; set by the first failure
	tearing    bool           // the job is coming down
	termSig    syscall.Signal // what running ranks get (SIGTERM or the forwarded signal)
	termSent   bool           // termSig has been sent
	killed     bool           // SIGKILL has been sent to everyone
	terminated map[int]bool   // ranks signalled by the teardown
	failed     int            // rank that caused the teardown, -1 otherwise
	termTimer  *time.Timer    // AbortWait: fires when termSig is due
	killTimer  *time.Timer    // Grace: fires when SIGKILL is due
	waiters    sync.WaitGroup

	suspended bool // SIGTSTP stopped the job; SIGCONT has not resumed it yet

	// stopStarting tells the starter goroutines to skip the ranks they have
	// not started yet: the only field they read that changes while they run.
	stopStarting atomic.Bool
}

// errNotStarted stands for a rank skipped because the job was already coming
// down when its turn came.
var errNotStarted = errors.New("not started: the job is being torn down")

func newSupervisor(r *resolved, ctl controlPlane) *supervisor {
	n := len(r.slots)
	s := &supervisor{
		r: r, ctl: ctl,
		tablePaths:   make([]string, len(r.hosts)),
		mux:          &outputMux{tagged: r.TagOutput, jobNum: 1},
		broken:       make(chan error, 1),
		state:        make([]rankState, n),
		procs:        make([]Process, n),
		statuses:     make([]ExitStatus, n),
		writers:      make([][2]*lineWriter, n),
		left:         n,
		started:      make(chan startedMsg, n),
		exited:       make(chan exitedMsg, n),
		lostDue:      make(chan int, n),
		flagged:      make(map[int]controlEvent),
		view:         make([]ctlView, n),
		waitingLeave: make(map[int]bool),
		unseen:       make(map[int]bool),
		joinDue:      make(chan int, n),
		terminated:   make(map[int]bool),
		failed:       -1,
	}
	s.mux.broken = func(err error) {
		select {
		case s.broken <- err:
		default: // one is enough
		}
	}
	for i := range s.writers {
		s.writers[i] = [2]*lineWriter{
			s.mux.writer(r.stdout, i, "stdout", i == 0 && r.Stdin != nil),
			s.mux.writer(r.stderr, i, "stderr", i == 0 && r.Stdin != nil),
		}
	}
	return s
}

// cleanup closes the control plane and the spawners (removing the rank
// tables). It runs after every waiter has returned.
func (s *supervisor) cleanup() {
	s.waiters.Wait()
	if s.r.Collect != nil {
		values := make([][]byte, len(s.r.slots))
		for rank := range values {
			values[rank], _ = s.ctl.Value(s.r.CollectKey + strconv.Itoa(rank))
		}
		s.r.Collect(values)
	}
	if err := s.ctl.Close(); err != nil {
		s.r.log.Warn("close control plane", "err", err)
	}
	for _, h := range s.r.hosts {
		if err := h.Spawner.Close(); err != nil {
			s.r.log.Warn("close spawner", "host", h.Spawner.Host(), "err", err)
		}
	}
}

// run starts the ranks and handles every event until all ranks are
// finished.
func (s *supervisor) run(ctx context.Context) error {
	s.startAll()

	var timeout <-chan time.Time
	if s.r.Timeout > 0 {
		t := time.NewTimer(s.r.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	defer func() {
		stopTimer(s.termTimer)
		stopTimer(s.killTimer)
	}()
	ctxDone := ctx.Done()
	events := s.ctl.Events()
	for s.left > 0 || (!s.tearing && len(s.waitingLeave) > 0) || s.settleUnseen() {
		select {
		case m := <-s.started:
			s.onStarted(m)
		case m := <-s.exited:
			s.onExited(m)
		case ev, ok := <-events:
			if !ok {
				events = nil // the control plane is gone; the processes still tell
				clear(s.waitingLeave)
				continue
			}
			s.onControl(ev)
		case rank := <-s.lostDue:
			s.onLostDue(rank)
		case rank := <-s.joinDue:
			s.onJoinDue(rank)
		case err := <-s.broken:
			// Nobody reads the output any more (hcclrun ... | head): stop
			// the job as a pipeline would, but in order.
			s.teardown(&OutputError{Err: err}, -1, syscall.SIGTERM, "the launcher's output is closed")
		case sig := <-s.r.Signals:
			s.onSignal(sig)
		case <-timeout:
			s.teardown(&TimeoutError{Limit: s.r.Timeout}, -1, syscall.SIGTERM, "job timed out")
		case <-ctxDone:
			ctxDone = nil
			s.teardown(fmt.Errorf("job cancelled: %w", ctx.Err()), -1, syscall.SIGTERM, "job cancelled")
		case <-timerC(s.termTimer):
			s.termTimer = nil
			s.sendTerm()
		case <-timerC(s.killTimer):
			s.killTimer = nil
			s.killAll()
		}
	}
	s.countTerminated()
	return s.result
}

// startAll starts every rank: the hosts in parallel, and on each host up
// to startsInFlight ranks at once, taken in rank order. Results arrive on
// s.started.
func (s *supervisor) startAll() {
	byHost := make([][]int, len(s.r.hosts))
	for rank, slot := range s.r.slots {
		byHost[slot.host] = append(byHost[slot.host], rank)
	}
	for h, ranks := range byHost {
		next := make(chan int, len(ranks))
		for _, rank := range ranks {
			next <- rank
		}
		close(next)
		for range min(len(ranks), startsInFlight) {
			go func() {
				for rank := range next {
					if s.stopStarting.Load() {
						s.started <- startedMsg{rank: rank, err: errNotStarted}
						continue
					}
					p, err := s.r.hosts[h].Spawner.Start(s.spec(rank))
					s.started <- startedMsg{rank: rank, proc: p, err: err}
				}
			}()
		}
	}
}

// startsInFlight is how many ranks of one host start at once. A start
// returns when the program has been executed, an exec can cost
// milliseconds, most of them in the child (the kernel loading the
// program, its page faults), and a job's start-up waits for its last rank,
// so starting one after the other puts the last rank behind
// (docs/measurements.md#ranks-started-four-at-a-time). Spawner allows
// concurrent Starts.
const startsInFlight = 4

// spec builds the ProcSpec of one rank.
func (s *supervisor) spec(rank int) ProcSpec {
	slot := s.r.slots[rank]
	env := s.r.env
	env.RankTableFile = s.tablePaths[slot.host]
	spec := ProcSpec{
		Rank:   rank,
		Path:   s.r.Program,
		Args:   s.r.Args,
		Dir:    s.r.Dir,
		Env:    append(append(MasterEnv(env), s.r.exports...), RankEnv(slot.id, env)...),
		CPUs:   s.r.rankCPUs(rank),
		Stdout: s.writers[rank][0],
		Stderr: s.writers[rank][1],
	}
	if rank == 0 {
		spec.Stdin = s.r.Stdin
	}
	return spec
}

func (s *supervisor) onStarted(m startedMsg) {
	if m.err != nil {
		s.state[m.rank] = finished
		s.left--
		if m.err == errNotStarted {
			return
		}
		if s.tearing {
			s.preferLowerStartError(m)
			return
		}
		s.teardown(m.err, -1, syscall.SIGTERM, fmt.Sprintf("rank %d could not be started", m.rank))
		return
	}
	s.state[m.rank] = running
	s.procs[m.rank] = m.proc
	s.r.log.Debug("rank started", "rank", m.rank, "pid", m.proc.Pid(), "host", s.host(m.rank))
	s.waiters.Add(1)
	go func() {
		defer s.waiters.Done()
		st, err := m.proc.Wait()
		s.exited <- exitedMsg{rank: m.rank, status: st, err: err}
	}()
	// A rank that comes up during a teardown joins it at once, and one
	// that comes up while the job is stopped stops too.
	switch {
	case s.killed:
		s.signal(m.rank, syscall.SIGKILL)
	case s.termSent:
		s.signal(m.rank, s.termSig)
		s.signal(m.rank, syscall.SIGCONT)
	case s.suspended:
		s.jobControl(m.rank, syscall.SIGSTOP)
	}
}

// preferLowerStartError: ranks of one host start several at once, so
// when a program cannot be started at all, rank 1's failure may arrive
// before rank 0's. The job reports the lowest rank that could not be
// started, as it did when ranks started one after the other, so that the
// same mistake always reads the same.
func (s *supervisor) preferLowerStartError(m startedMsg) {
	var first *StartError
	if !errors.As(s.result, &first) {
		return
	}
	var this *StartError
	if errors.As(m.err, &this) && this.Rank < first.Rank {
		s.result = m.err
	}
}

func (s *supervisor) onExited(m exitedMsg) {
	s.state[m.rank] = finished
	s.statuses[m.rank] = m.status
	s.left--
	for _, w := range s.writers[m.rank] {
		if err := w.Flush(); err != nil {
			s.r.log.Debug("relay output", "rank", m.rank, "err", err)
		}
	}
	p := s.procs[m.rank]
	s.r.log.Debug("rank exited", "rank", m.rank, "pid", p.Pid(), "status", m.status.String(), "err", m.err)
	if s.tearing {
		s.noteHostLost(m)
		return
	}
	if m.err == nil && m.status.Success() {
		if ev, ok := s.flagged[m.rank]; ok && ev.kind == eventAborted {
			// It aborted the job, then exited 0: still the failure.
			s.fail(s.flaggedError(m.rank, &m.status))
			return
		}
		s.onExitedZero(m.rank)
		return
	}
	s.fail(&RankError{Rank: m.rank, Pid: p.Pid(), Host: s.host(m.rank), Status: m.status, Err: m.err, Cause: s.abortCause(m.rank)})
}

// abortCause names the abort another rank raised before rank failed, if
// any: "rank 2 aborted the job: <reason>".
func (s *supervisor) abortCause(rank int) string {
	first := -1
	for r, ev := range s.flagged {
		if ev.kind == eventAborted && r != rank && (first < 0 || ev.seq < s.flagged[first].seq) {
			first = r
		}
	}
	if first < 0 {
		return ""
	}
	return fmt.Sprintf("rank %d aborted the job: %s", first, s.flagged[first].reason)
}

// noteHostLost: the failed rank, whose control connection was lost first,
// turns out to be on a host whose agent link was lost too (a cut or a
// crashed host). The host's loss is the better summary: it names the host
// and all its ranks.
func (s *supervisor) noteHostLost(m exitedMsg) {
	var hl *HostLostError
	re, ok := s.result.(*RankError)
	if !ok || re.Err != nil || !errors.As(m.err, &hl) || s.r.slots[m.rank].host != s.r.slots[re.Rank].host {
		return
	}
	if m.rank == re.Rank || re.Lost {
		re.Err, re.Lost = m.err, false
	}
}

// onControl handles the control plane's news. A rank that lost its
// connection or aborted the job is flagged and given lostWindow to exit:
// if it does, its exit status tells the story; if it is still running
// then, it is the failure.
func (s *supervisor) onControl(ev controlEvent) {
	if ev.rank < 0 || ev.rank >= len(s.state) {
		return
	}
	switch ev.kind {
	case eventJoined:
		s.onJoined(ev.rank)
		return
	case eventLeft:
		s.onLeft(ev.rank)
		return
	case eventLost:
		s.r.log.Debug("rank lost its control connection", "rank", ev.rank, "why", ev.reason)
		s.view[ev.rank] = viewLost
	case eventAborted:
		s.r.log.Info("rank aborted the job", "rank", ev.rank, "reason", ev.reason)
	}
	if s.tearing {
		return
	}
	if ev.kind == eventLost && s.state[ev.rank] == finished && s.procs[ev.rank] != nil {
		// It exited 0 (else the job would be coming down) and then its
		// connection was lost, not left.
		s.onLostAfterExit(ev.rank)
		return
	}
	if _, seen := s.flagged[ev.rank]; seen {
		return
	}
	s.flagSeq++
	ev.seq = s.flagSeq
	s.flagged[ev.rank] = ev
	if s.state[ev.rank] == finished {
		if ev.kind == eventAborted && s.procs[ev.rank] != nil {
			// It exited 0 before the news of its abort arrived; the
			// abort has reached every rank, so the job is over.
			st := s.statuses[ev.rank]
			s.fail(s.flaggedError(ev.rank, &st))
		}
		return
	}
	rank := ev.rank
	time.AfterFunc(lostWindow, func() { s.lostDue <- rank })
}

// onLostDue: the window of a flagged rank has passed.
func (s *supervisor) onLostDue(rank int) {
	if s.tearing || s.state[rank] != running {
		return // it exited in the window: its exit was the news
	}
	s.fail(s.flaggedError(rank, nil))
}

// flaggedError describes a rank flagged by the control plane; st is its
// exit status when it exited (with code 0) after aborting the job.
func (s *supervisor) flaggedError(rank int, st *ExitStatus) *RankError {
	ev := s.flagged[rank]
	e := &RankError{Rank: rank, Pid: s.procs[rank].Pid(), Host: s.host(rank)}
	if st != nil {
		e.Status = *st
	}
	switch ev.kind {
	case eventLost:
		e.Lost = true
	case eventAborted:
		e.Aborted, e.Reason = true, ev.reason
	}
	return e
}

// fail tears the job down because of rank e.Rank.
func (s *supervisor) fail(e *RankError) {
	s.teardown(e, e.Rank, syscall.SIGTERM, fmt.Sprintf("rank %d %s", e.Rank, e.what()))
}

func (s *supervisor) host(rank int) string {
	return s.r.hosts[s.r.slots[rank].host].Spawner.Host()
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// timerC is t's channel, or nil (never ready) when there is no timer.
func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

package launcher

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// onSignal forwards the first signal the launcher gets (SIGINT, SIGTERM,
// SIGHUP: whatever Job.Signals delivers) to every rank; a second one, or one
// during a teardown that has another cause, kills every rank at once.
// SIGTSTP and SIGCONT stop and resume the job instead (suspend.go).
func (s *supervisor) onSignal(sig os.Signal) {
	ss, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	switch ss {
	case syscall.SIGTSTP:
		s.onSuspend() // suspend.go
		return
	case syscall.SIGCONT:
		s.onResume()
		return
	case syscall.SIGUSR1:
		s.printStatus() // jobstatus.go
		return
	}
	if s.tearing {
		s.r.log.Debug("second signal: killing every rank", "signal", SignalName(ss))
		if ie, ok := s.result.(*InterruptError); ok {
			ie.Killed = true
		}
		s.killAll()
		return
	}
	s.teardown(&InterruptError{Signal: ss}, -1, ss, "interrupted by "+SignalName(ss))
	// The forwarded signal is the rank's chance to stop cleanly; send it
	// now even when AbortWait would let the ranks read the abort first.
	if !s.termSent {
		stopTimer(s.termTimer)
		s.termTimer = nil
		s.sendTerm()
	}
}

// teardown brings the job down because of result: abort is broadcast on the
// control plane (origin failed, -1 for the launcher), every running rank gets
// sig (after AbortWait), and SIGKILL follows after the grace. Only the first
// call counts.
func (s *supervisor) teardown(result error, failed int, sig syscall.Signal, reason string) {
	if s.tearing {
		return
	}
	s.tearing = true
	s.result = result
	s.failed = failed
	s.termSig = sig
	s.r.log.Debug("tearing the job down", "reason", reason)
	s.ctl.Abort(failed, reason)
	// Ranks not started yet are not started at all.
	s.stopStarting.Store(true)
	if s.r.AbortWait > 0 {
		s.termTimer = time.NewTimer(s.r.AbortWait)
		return
	}
	s.sendTerm()
}

// sendTerm sends termSig to every running rank (the failed one too, when
// it is a lost rank still running) and arms the SIGKILL timer. SIGCONT
// follows, so that a stopped rank gets to handle the signal rather than sit
// out the grace.
func (s *supervisor) sendTerm() {
	s.termSent = true
	for rank, st := range s.state {
		if st == running {
			s.signal(rank, s.termSig)
			s.signal(rank, syscall.SIGCONT)
		}
	}
	s.killTimer = time.NewTimer(s.r.grace)
}

// killAll sends SIGKILL to every running rank.
func (s *supervisor) killAll() {
	s.killed = true
	s.termSent = true
	stopTimer(s.termTimer)
	stopTimer(s.killTimer)
	s.termTimer, s.killTimer = nil, nil
	for rank, st := range s.state {
		if st == running {
			s.signal(rank, syscall.SIGKILL)
		}
	}
}

func (s *supervisor) signal(rank int, sig syscall.Signal) {
	if rank != s.failed {
		s.terminated[rank] = true
	}
	if err := s.procs[rank].Signal(sig); err != nil {
		s.r.log.Warn("signal rank", "rank", rank, "signal", SignalName(sig), "err", err)
	}
}

// countTerminated stores in the result how many ranks the teardown stopped.
func (s *supervisor) countTerminated() {
	n := len(s.terminated)
	var (
		re *RankError
		te *TimeoutError
		ie *InterruptError
		oe *OutputError
	)
	switch {
	case errors.As(s.result, &oe):
		oe.Terminated = n
	case errors.As(s.result, &re):
		re.Terminated = n
	case errors.As(s.result, &te):
		te.Terminated = n
	case errors.As(s.result, &ie):
		ie.Terminated = n
	}
}

package launcher

import (
	"syscall"
)

// Job control, as mpirun does it: SIGTSTP to the launcher (a shell's
// Ctrl-Z) stops every rank, then the launcher itself; SIGCONT (fg, bg,
// kill -CONT) resumes them. The ranks are stopped with SIGSTOP rather than
// handed the SIGTSTP, as Open MPI's mpirun does: a rank that catches or
// ignores SIGTSTP (a shell, an interpreter) would go on running while its
// peers and the control plane are stopped, and be declared lost by them.
//
// A stopped job's heartbeats stop on every side at once, and on SIGCONT the
// launcher resumes a moment before its ranks: the control plane's patient
// reads (netio/control) wait a heartbeat more before they believe a rank
// is lost, so a job stopped for a while comes back whole as long as the
// ranks resume within HCCL_HEARTBEAT_TIMEOUT of the launcher.
//
// Remote ranks are stopped and resumed through their agent (msgSignal).
// An agent sees its launcher fall silent meanwhile: a multi-host job
// stopped for longer than agentSilence (6 s) loses its remote hosts, whose
// agents take the silent launcher for gone and kill their ranks.

// onSuspend stops every running rank, then, through Job.Suspend, the
// launcher. Ranks that start while the job is stopped are stopped at once.
func (s *supervisor) onSuspend() {
	s.suspended = true
	for rank, st := range s.state {
		if st == running {
			s.jobControl(rank, syscall.SIGSTOP)
		}
	}
	if s.r.Suspend != nil {
		s.r.Suspend()
	}
}

// onResume resumes every running rank.
func (s *supervisor) onResume() {
	s.suspended = false
	for rank, st := range s.state {
		if st == running {
			s.jobControl(rank, syscall.SIGCONT)
		}
	}
}

// jobControl sends rank sig without counting it as terminated by a
// teardown.
func (s *supervisor) jobControl(rank int, sig syscall.Signal) {
	if err := s.procs[rank].Signal(sig); err != nil {
		s.r.log.Warn("signal rank", "rank", rank, "signal", SignalName(sig), "err", err)
	}
}

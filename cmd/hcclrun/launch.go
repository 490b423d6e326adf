package main

import (
	"context"
	"os"
	"syscall"

	"github.com/hcclrun/hcclrun/launcher"
)

// launchJob runs job with SIGINT, SIGTERM and SIGHUP (the terminal went
// away) routed to the launcher, which forwards them to the ranks (a second
// one kills them at once). SIGTSTP (Ctrl-Z) stops the ranks, then hcclrun
// itself with SIGSTOP; the SIGCONT of fg or bg resumes it, and the
// launcher resumes the ranks. SIGUSR1 prints the job's status (which call
// every rank is in, which peer it waits for). SIGPIPE is dropped
// (notifySignals).
func launchJob(ctx context.Context, job *launcher.Job, _ stdio) error {
	sigs, stop := notifySignals(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT, syscall.SIGUSR1)
	defer stop()
	job.Signals = sigs
	job.Suspend = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) }
	return job.Run(ctx)
}

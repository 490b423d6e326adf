package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hcclrun/hcclrun/launcher"
)

// launchJob runs job with SIGINT, SIGTERM and SIGHUP (the terminal went
// away) routed to the launcher, which forwards them to the ranks (a second
// one kills them at once). SIGTSTP (Ctrl-Z) stops the ranks, then hcclrun
// itself with SIGSTOP; the SIGCONT of fg or bg resumes it, and the
// launcher resumes the ranks.
//
// SIGPIPE is caught and dropped: a write to a closed stdout then fails with
// EPIPE, which the launcher answers by taking the job down in order (rank
// tables removed, ranks terminated), instead of the Go runtime killing
// hcclrun on the spot. Catching (rather than ignoring) keeps the ranks'
// SIGPIPE at its default, since exec resets caught signals only.
func launchJob(ctx context.Context, job *launcher.Job, _ stdio) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGTSTP, syscall.SIGCONT)
	defer signal.Stop(sigs)
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(pipes)
	go func() {
		for range pipes {
		}
	}()
	job.Signals = sigs
	job.Suspend = func() { _ = syscall.Kill(os.Getpid(), syscall.SIGSTOP) }
	return job.Run(ctx)
}

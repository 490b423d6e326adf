package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifySignals delivers sigs on the channel it returns, for the launcher
// or the agent to forward to the ranks, until stop is called.
//
// It also catches SIGPIPE and drops it: a write to a closed stdout then
// fails with EPIPE, which the launcher and the agent answer by taking the
// job down in order (rank tables removed, ranks terminated), instead of the
// Go runtime killing the process on the spot. Catching (rather than
// ignoring) keeps the ranks' SIGPIPE at its default, since exec resets
// caught signals only.
func notifySignals(sigs ...os.Signal) (_ <-chan os.Signal, stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, sigs...)
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	go func() {
		for range pipes {
		}
	}()
	return ch, func() {
		signal.Stop(ch)
		signal.Stop(pipes)
		close(pipes)
	}
}

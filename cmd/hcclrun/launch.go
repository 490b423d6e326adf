package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hcclrun/hcclrun/launcher"
)

// launchJob runs job with SIGINT and SIGTERM routed to the launcher, which
// forwards them to the ranks (a second SIGINT kills them at once).
func launchJob(ctx context.Context, job *launcher.Job, _ stdio) error {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	job.Signals = sigs
	return job.Run(ctx)
}

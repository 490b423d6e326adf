package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/bench"
	"github.com/hcclrun/hcclrun/launcher"
)

// benchCommand is `hcclrun bench` (package bench): the benchmark job runs
// with the CLI's signal handling, and its flag errors are usage errors.
func benchCommand() *cli.Command {
	return bench.Command(bench.Config{
		Launch: func(ctx context.Context, job *launcher.Job) error {
			return launchJob(ctx, job, stdio{})
		},
		OnUsageError: onUsageError,
	})
}

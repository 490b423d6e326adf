// Command hcclrun launches a job of N ranks, the way mpirun does, and hosts
// the subcommands that inspect what a job would get (ranktable, ...).
//
// This package is the CLI only: it turns flags into a launcher.Job, and it is
// the one place that maps errors to exit codes and calls os.Exit.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/hcclrun/hcclrun/launcher"
)

func main() {
	os.Exit(run(context.Background(), os.Args, stdio{os.Stdin, os.Stdout, os.Stderr}))
}

// stdio is where the CLI reads and writes; tests pass buffers.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// run executes the command line and returns the exit code: 0, a failed
// rank's code (128+n for signal n), 124 for a timeout, 2 for a usage error,
// 126/127 for a program that cannot be run, 1 otherwise. Every error is
// printed once, to stderr, as "hcclrun: ..." (the summary of a failed job).
func run(ctx context.Context, args []string, io stdio) int {
	app := newApp(io, launchJob)
	err := app.RunContext(ctx, args)
	if err == nil {
		return 0
	}
	if isUsage(err) {
		fmt.Fprintf(io.err, "hcclrun: %v (see 'hcclrun --help')\n", err)
	} else {
		fmt.Fprintf(io.err, "hcclrun: %v\n", err)
	}
	return launcher.ExitCode(err)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

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
// 126/127 for a program that cannot be run, 141 when stdout was closed, 1
// otherwise. Every error is printed once, to stderr, as "hcclrun: ..." (the
// summary of a failed job), except the closed stdout.
func run(ctx context.Context, args []string, io stdio) int {
	app := newApp(io, launchJob)
	err := app.RunContext(ctx, args)
	if err == nil || errors.Is(err, errMapShown) {
		return 0
	}
	var oe *launcher.OutputError
	switch {
	case errors.As(err, &oe) && errors.Is(oe.Err, syscall.EPIPE):
		// stdout was closed (hcclrun ... | head): quiet, as a pipeline is.
	case isUsage(err):
		fmt.Fprintf(io.err, "hcclrun: %v (see 'hcclrun --help')\n", err)
	default:
		fmt.Fprintf(io.err, "hcclrun: %v\n", err)
	}
	return launcher.ExitCode(err)
}

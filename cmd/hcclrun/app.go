package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
)

// launchFunc runs a job; the real one is launchJob, the flag tests capture
// the Job instead.
type launchFunc func(ctx context.Context, job *launcher.Job, io stdio) error

const usageText = `hcclrun [options] PROGRAM [ARGS...]
   hcclrun ranktable [-np N | --check FILE]`

const description = `hcclrun starts N copies (ranks) of PROGRAM on this machine (or, with
--hostfile or -H, on those hosts over ssh), hands each its
identity and a generated rank table in the environment (HCCL_RANK,
HCCL_WORLD_SIZE, HCCL_RANK_TABLE_FILE, ... and the torchrun, Open MPI and HCCL
names), serves the job's control plane, relays their output, and brings the
whole job down as soon as one rank fails. Option parsing stops at PROGRAM:
everything after it reaches every rank untouched.

SIGINT, SIGTERM and SIGHUP to hcclrun are forwarded to every rank (a second
one kills them). Ctrl-Z (SIGTSTP) stops every rank and then hcclrun; fg or
bg (SIGCONT) resumes them all. A job with ranks on other hosts survives a
stop of a few seconds only: longer, their agents take hcclrun for gone.

HCCL_HEARTBEAT_TIMEOUT (seconds, default 10), in hcclrun's environment or
given with -x, is how long a rank may be silent on the control plane before
it is declared lost and the job brought down. A rank that dies is noticed at
once; the timeout catches a frozen one (HCCL_EXEC_TIMEOUT catches a stuck
collective sooner).

Exit status: 0 when every rank exited 0; otherwise the first failed rank's
code (128+n when signal n killed it), 124 when --timeout expired, 128+n when
hcclrun itself got signal n, 2 for a usage error, 126/127 when PROGRAM cannot
be executed or does not exist. A rank that exits 0 fails the job too (exit
status 1) when it called Init but not Close, or did not call Init while
other ranks did: they would wait for it.

Examples:
   hcclrun -np 4 ./train --lr 0.1
   hcclrun -n 2 --tag-output -x OMP_NUM_THREADS=1 -x PATH python3 worker.py
   hcclrun -np 8 --timeout 10m --grace 2s ./bench
   hcclrun --hostfile hosts -np 8 /shared/train   # hosts: "node1 slots=4" lines
   hcclrun -H node[1-2]:4 --display-map ./train   # where the ranks would run
   hcclrun ranktable -np 4               # the rank table a 4-rank job gets
   hcclrun ranktable --check table.json  # validate a table (ours or HCCL's)`

func init() {
	// mpirun spells verbose -v; version gets -V.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Aliases: []string{"V"}, Usage: "print the version and exit"}
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprintf(c.App.Writer, "hcclrun %s\n", c.App.Version)
	}
}

// newApp builds the command line: the root command launches a job with
// launch, the subcommands come from the table in commands.go.
func newApp(io stdio, launch launchFunc) *cli.App {
	return &cli.App{
		Name:                      "hcclrun",
		Usage:                     "run a program on N ranks with a collective-communication runtime",
		UsageText:                 usageText,
		Description:               description,
		Version:                   versionString(),
		Reader:                    io.in,
		Writer:                    io.out,
		ErrWriter:                 io.err,
		HideHelpCommand:           true, // "help" may be a program's name
		DisableSliceFlagSeparator: true, // -x A=1,2 sets A to "1,2"
		Flags:                     launchFlags(),
		Commands:                  commands(),
		OnUsageError:              onUsageError,
		ExitErrHandler:            func(*cli.Context, error) {}, // exit codes are run's business
		Action: func(c *cli.Context) error {
			job, err := jobFromFlags(c, io)
			if err != nil {
				return err
			}
			return launch(c.Context, job, io)
		},
	}
}

func launchFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.IntFlag{Name: "np", Aliases: []string{"n"}, Usage: "number of ranks", DefaultText: "one per CPU"},
		&cli.StringSliceFlag{Name: "x", Usage: "export `VAR` (or set VAR=value) in every rank; repeatable"},
		&cli.BoolFlag{Name: "tag-output", Usage: "prefix every output line with [1,rank]<stdout>: or <stderr>:"},
		&cli.StringFlag{Name: "bind-to", Value: "auto", Usage: "bind each host's ranks to CPUs: `auto` (a block of the host's CPUs each unless they outnumber them), core (one CPU each) or none"},
		&cli.GenericFlag{Name: "timeout", Value: new(durationValue), Usage: "stop the job after `DURATION` (e.g. 90s, 10m; a bare number is seconds) and exit 124"},
		&cli.GenericFlag{Name: "grace", Value: &durationValue{d: launcher.DefaultGrace}, Usage: "delay between SIGTERM and SIGKILL when the job is torn down (`DURATION`; 0 kills at once)"},
		&cli.GenericFlag{Name: "abort-wait", Value: new(durationValue), Hidden: true, Usage: "after a failure, let ranks see the abort for DURATION before SIGTERM"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log the launcher's decisions to stderr"},
	}, append(hostFlags(), observeFlags()...)...)
}

// jobFromFlags turns the root command's flags and arguments into a Job.
func jobFromFlags(c *cli.Context, io stdio) (*launcher.Job, error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return nil, launcher.Usagef("missing program: hcclrun [options] PROGRAM [ARGS...]")
	}
	return jobWith(c, io, args[0], args[1:])
}

// jobWith turns the launch flags into a Job that runs program with args;
// subcommands that launch hcclrun itself as the ranks (topo, bench) use it.
func jobWith(c *cli.Context, io stdio, program string, args []string) (*launcher.Job, error) {
	np := goruntime.NumCPU()
	if c.IsSet("np") {
		np = c.Int("np")
	}
	if np < 1 {
		return nil, launcher.Usagef("-np must be at least 1, got %d", np)
	}
	if np > launcher.MaxRanks {
		return nil, launcher.Usagef("-np %d is more than the %d ranks a job may have", np, launcher.MaxRanks)
	}
	level := slog.LevelWarn
	if c.Bool("verbose") {
		level = slog.LevelDebug
	}
	bind, err := launcher.ParseBindPolicy(c.String("bind-to"))
	if err != nil {
		return nil, err
	}
	job := &launcher.Job{
		Program:   program,
		Bind:      bind,
		Args:      args,
		NP:        np,
		Export:    c.StringSlice("x"),
		TagOutput: c.Bool("tag-output"),
		Timeout:   durationFlag(c, "timeout"),
		Grace:     graceFlag(c),
		AbortWait: durationFlag(c, "abort-wait"),
		Stdin:     rankStdin(io.in),
		Stdout:    io.out,
		Stderr:    io.err,
		Logger:    slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: level})),
		CollName:  collName, // status.go
	}
	if err := placeJob(c, io, job); err != nil {
		return nil, err
	}
	if err := observeJob(c, io, job); err != nil { // trace.go
		return nil, err
	}
	return job, nil
}

// graceFlag is --grace for the Job, whose zero means the default: an
// explicit --grace 0 (SIGKILL right after SIGTERM) becomes 1ns.
func graceFlag(c *cli.Context) time.Duration {
	g := durationFlag(c, "grace")
	if g == 0 && c.IsSet("grace") {
		return time.Nanosecond
	}
	return g
}

func durationFlag(c *cli.Context, name string) time.Duration {
	if v, ok := c.Generic(name).(*durationValue); ok {
		return v.d
	}
	return 0
}

// onUsageError makes urfave/cli's flag errors usage errors: exit code 2,
// and a hint to read --help.
func onUsageError(_ *cli.Context, err error, _ bool) error {
	return launcher.UsageError(err)
}

func isUsage(err error) bool { return errors.Is(err, launcher.ErrUsage) }

package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
	"github.com/hcclrun/hcclrun/runtime/trace"
)

// observeFlags are the launch flags of tracing and the end-of-job report
// (report.go).
func observeFlags() []cli.Flag {
	return append(reportFlags(),
		&cli.StringFlag{Name: "trace", Usage: "every rank records its collectives and writes them to `DIR`/rank-R.json (HCCL_TRACE); merge them with hcclrun trace merge DIR"},
	)
}

// observeJob applies --trace, --report and --report-json to job: the
// ranks' variables, and the launcher's collection of their summaries.
func observeJob(c *cli.Context, io stdio, job *launcher.Job) error {
	if dir := c.String("trace"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		job.Export = append(job.Export, "HCCL_TRACE="+abs)
	}
	return reportJob(c, io, job) // report.go
}

// traceCommand holds the subcommands on trace directories.
func traceCommand() *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "work with the traces --trace (HCCL_TRACE) wrote",
		Subcommands: []*cli.Command{{
			Name:      "merge",
			Usage:     "merge a job's rank traces into one Chrome Trace Event / Perfetto JSON timeline",
			UsageText: "hcclrun trace merge DIR -o job.json",
			Description: `Reads DIR/rank-*.json, the files every rank of a job run with --trace DIR
(or HCCL_TRACE=DIR) wrote, and writes one timeline in Chrome's Trace Event
Format, which ui.perfetto.dev and chrome://tracing open: one process per
host, one track per rank, each call with its steps and the waits for peers
nested inside. Ranks' clocks are put on the launcher's with the offsets
they measured against the control plane; metadata.clocks has each rank's
offset and error bar (half the round trip).`,
			Flags:        []cli.Flag{&cli.StringFlag{Name: "o", Usage: "write the timeline to `FILE` (default: stdout)"}},
			OnUsageError: onUsageError,
			Action: func(c *cli.Context) error {
				// -o may follow the directory, where the flag parser
				// has stopped: take it from the arguments.
				outPath, args := c.String("o"), c.Args().Slice()
				if n := len(args); n == 3 && (args[1] == "-o" || args[1] == "--o") {
					outPath, args = args[2], args[:1]
				}
				if len(args) != 1 {
					return launcher.Usagef("trace merge: want one directory and -o FILE, got %q", args)
				}
				files, err := trace.ReadDir(args[0])
				if err != nil {
					return err
				}
				merged, err := trace.Merge(files)
				if err != nil {
					return err
				}
				out := c.App.Writer
				if outPath != "" {
					f, err := os.Create(outPath)
					if err != nil {
						return err
					}
					defer f.Close()
					out = f
				}
				if err := merged.Write(out); err != nil {
					return err
				}
				if f, ok := out.(*os.File); ok && out != c.App.Writer {
					return f.Close()
				}
				return nil
			},
		}},
	}
}

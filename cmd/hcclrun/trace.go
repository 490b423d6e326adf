package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

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
			UsageText: "hcclrun trace merge DIR -o job.json [--html timeline.html [--from US] [--to US]]",
			Description: `Reads DIR/rank-*.json, the files every rank of a job run with --trace DIR
(or HCCL_TRACE=DIR) wrote, and writes one timeline in Chrome's Trace Event
Format, which ui.perfetto.dev and chrome://tracing open: one process per
host, one track per rank, each call with its steps and the waits for peers
nested inside. Ranks' clocks are put on the launcher's with the offsets
they measured against the control plane; metadata.clocks has each rank's
offset and error bar (half the round trip).`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "o", Usage: "write the timeline to `FILE` (default: stdout)"},
				&cli.StringFlag{Name: "html", Usage: "also draw the timeline as an HTML page with an SVG to `FILE`, for a browser without a trace viewer"},
				&cli.Float64Flag{Name: "from", Usage: "--html: draw from `US` microseconds into the job"},
				&cli.Float64Flag{Name: "to", Usage: "--html: draw up to `US` microseconds (default: the end)"},
			},
			OnUsageError: onUsageError,
			Action: func(c *cli.Context) error {
				m, err := mergeArgs(c)
				if err != nil {
					return err
				}
				files, err := trace.ReadDir(m.dir)
				if err != nil {
					return err
				}
				merged, err := trace.Merge(files)
				if err != nil {
					return err
				}
				if m.html != "" {
					if err := writeFile(m.html, func(w io.Writer) error { return merged.WriteHTML(w, 1600, m.from, m.to) }); err != nil {
						return err
					}
				}
				if m.out == "" {
					return merged.Write(c.App.Writer)
				}
				return writeFile(m.out, merged.Write)
			},
		}},
	}
}

// mergeOptions are trace merge's directory and flags.
type mergeOptions struct {
	dir, out, html string
	from, to       float64
}

// mergeArgs reads trace merge's flags before the directory (the flag
// parser's) and after it, where the parser has stopped, as users write
// them: hcclrun trace merge DIR -o job.json.
func mergeArgs(c *cli.Context) (mergeOptions, error) {
	m := mergeOptions{out: c.String("o"), html: c.String("html"), from: c.Float64("from"), to: c.Float64("to")}
	args := c.Args().Slice()
	var rest []string
	for i := 0; i < len(args); i++ {
		name := strings.TrimLeft(args[i], "-")
		if !strings.HasPrefix(args[i], "-") || !slices.Contains([]string{"o", "html", "from", "to"}, name) {
			rest = append(rest, args[i])
			continue
		}
		if i+1 == len(args) {
			return m, launcher.Usagef("trace merge: %s needs a value", args[i])
		}
		v := args[i+1]
		i++
		switch name {
		case "o":
			m.out = v
		case "html":
			m.html = v
		default:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return m, launcher.Usagef("trace merge: %s %q: want microseconds", args[i-1], v)
			}
			if name == "from" {
				m.from = f
			} else {
				m.to = f
			}
		}
	}
	if len(rest) != 1 {
		return m, launcher.Usagef("trace merge: want one directory, got %q", rest)
	}
	m.dir = rest[0]
	return m, nil
}

// writeFile writes path with write, closing it and reporting the close's
// error.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

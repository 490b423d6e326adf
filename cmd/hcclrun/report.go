package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
	hccl "github.com/hcclrun/hcclrun/runtime"
	"github.com/hcclrun/hcclrun/runtime/trace"
)

// reportFlags are the launch flags of the end-of-job report.
func reportFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "report", Usage: "print per collective and size class: calls, bytes, time, algorithms and the slowest rank, when the job ends (HCCL_REPORT=1)"},
		&cli.StringFlag{Name: "report-json", Usage: "write the report as JSON to `FILE` when the job ends (implies HCCL_REPORT=1 in the ranks)"},
	}
}

// reportJob applies --report and --report-json: every rank tallies its
// calls (HCCL_REPORT=1) and puts the tally on the control plane at Close,
// where the launcher collects them once the ranks are done
// (launcher.Job.Collect); the report combines them (trace.MakeReport)
// and goes to stderr, or as JSON to a file.
func reportJob(c *cli.Context, io stdio, job *launcher.Job) error {
	text, jsonPath := c.Bool("report"), c.String("report-json")
	if !text && jsonPath == "" {
		return nil
	}
	job.Export = append(job.Export, "HCCL_REPORT=1")
	job.CollectKey = hccl.ReportKey
	job.Collect = func(values [][]byte) {
		var sums []trace.Summary
		for rank, v := range values {
			if v == nil {
				continue
			}
			var s trace.Summary
			if err := json.Unmarshal(v, &s); err != nil || s.Rank != rank {
				fmt.Fprintf(io.err, "hcclrun: report: rank %d sent a summary that does not parse (%v)\n", rank, err)
				continue
			}
			sums = append(sums, s)
		}
		r := trace.MakeReport(len(values), sums)
		if text {
			r.Print(io.err)
		}
		if jsonPath != "" {
			b, err := json.MarshalIndent(r, "", "  ")
			if err == nil {
				err = os.WriteFile(jsonPath, append(b, '\n'), 0o644)
			}
			if err != nil {
				fmt.Fprintf(io.err, "hcclrun: --report-json: %v\n", err)
			}
		}
	}
	return nil
}

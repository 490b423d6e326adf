package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// statusCommand prints a running job's status: for every rank the
// collective it is in and the peer it waits for, from the control plane's
// heartbeats (launcher/jobstatus.go). SIGUSR1 to hcclrun prints the same
// to the job's stderr.
func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "print which call each rank of a running job is in and which peer it waits for",
		UsageText: "hcclrun status [PID]   (PID: the launching hcclrun's, needed when several jobs run)",
		Description: `Asks a running hcclrun (of this user) for its job's status, from the
control plane's heartbeats: every rank's state, the collective it is in
(its number, kind and plan step), the peer it waits for, and how long the
control plane has not heard from it. A rank silent for more than two
heartbeats is flagged SILENT: stopped (SIGSTOP, a debugger), hung, or cut
off; the peers that wait for it say so in WAITS FOR. The job is not
disturbed. kill -USR1 <hcclrun's pid> prints the same to the job's stderr.`,
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			pid := 0
			if c.NArg() > 1 {
				return launcher.Usagef("status: at most one argument, the launcher's process id")
			}
			if a := c.Args().First(); a != "" {
				n, err := strconv.Atoi(strings.SplitN(a, "/", 2)[0]) // PID or PID/JOB as a list of several jobs names it
				if err != nil || n <= 0 {
					return launcher.Usagef("status: %q is not a process id", a)
				}
				pid = n
			}
			ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
			defer cancel()
			return launcher.QueryStatus(ctx, c.App.Writer, pid)
		},
	}
}

// collName names a collective by its number on the wire.
func collName(c uint8) string { return plan.Coll(c).String() }

package main

import (
	"fmt"
	"log/slog"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
)

// agentCommand is `hcclrun agent`, which the launcher starts once per
// remote host over SSH: it speaks the launcher's frame protocol on stdin and
// stdout and starts that host's ranks (see launcher.RunAgent). It is hidden
// because only hcclrun itself runs it.
func agentCommand() *cli.Command {
	return &cli.Command{
		Name:   "agent",
		Hidden: true,
		Usage:  "per-host agent of a multi-host job (started by hcclrun over ssh)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "connect", Usage: "dial the launcher at `ADDR` (Slurm launches; the link key comes on stdin)"},
			&cli.StringFlag{Name: "nodes", Usage: "the job's Slurm `NODES`, in the launcher's order"},
		},
		Action: func(c *cli.Context) error {
			// sshd tearing the session down, or a user's kill: the
			// ranks go with the agent. A write to a closed stdout is
			// an error the agent handles (kill its ranks, remove the
			// table), not the Go runtime's SIGPIPE exit.
			sigs, stop := notifySignals(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
			defer stop()
			in, out, key := c.App.Reader, c.App.Writer, ""
			if addr := c.String("connect"); addr != "" {
				conn, k, err := launcher.DialLauncher(c.Context, addr, c.String("nodes"), slurmNodeName(), c.App.Reader)
				if err != nil {
					return fmt.Errorf("agent: %w", err)
				}
				defer conn.Close()
				in, out, key = conn, conn, k
			}
			err := launcher.RunAgent(c.Context, launcher.AgentConfig{
				In: in, Out: out, Signals: sigs, JobKey: key,
				Logger: slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			if err != nil {
				// The launcher is gone; nobody reads this but sshd's log.
				return fmt.Errorf("agent: %w", err)
			}
			return nil
		},
	}
}

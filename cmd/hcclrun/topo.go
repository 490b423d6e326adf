package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
	hccl "github.com/hcclrun/hcclrun/runtime"
)

// topoCommand launches a job whose ranks (hcclrun itself, as topo-rank)
// join, gather every rank's topology facts and print, from rank 0, what
// they see: servers, ranks, the rank x rank matrix of link classes and the
// NIC each rank uses, then the links a job's first calls open (openLinks).
func topoCommand() *cli.Command {
	return &cli.Command{
		Name:      "topo",
		Usage:     "launch a job that prints its servers, ranks and links",
		UsageText: "hcclrun topo [launch options]   e.g. hcclrun topo -np 4",
		Description: `Starts the ranks a job with the same options would get and prints, from
rank 0, the servers they found, the ranks of each, a rank x rank matrix of
link classes (shm within a server, tcp between servers, in the style of
nvidia-smi topo -m) and the network interface and CPUs of every rank; then
which links the job's first collectives opened (links open on first use):
how many per rank, the shared memory they hold, and a rank x rank matrix.`,
		Flags:        launchFlags(),
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return launcher.Usagef("topo: unexpected argument %q", c.Args().First())
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("topo: find hcclrun's own path: %w", err)
			}
			io := stdio{c.App.Reader, c.App.Writer, c.App.ErrWriter}
			job, err := jobWith(c, io, self, []string{"topo-rank"})
			if err != nil {
				return err
			}
			return launchJob(c.Context, job, io)
		},
	}
}

// topoRankCommand is what each rank of `hcclrun topo` runs.
func topoRankCommand() *cli.Command {
	return &cli.Command{
		Name:   "topo-rank",
		Hidden: true,
		Usage:  "one rank of hcclrun topo (started by hcclrun)",
		Action: func(c *cli.Context) error { return topoRank(c.Context, c.App.Writer) },
	}
}

func topoRank(ctx context.Context, w io.Writer) error {
	comm, err := hccl.Init(ctx)
	if err != nil {
		return err
	}
	defer comm.Close()
	if comm.Rank() == 0 {
		t, err := comm.Topology(ctx)
		if err != nil {
			return err
		}
		if err := t.Print(w); err != nil {
			return err
		}
	}
	if err := openLinks(ctx, comm, w); err != nil {
		return err
	}
	return comm.Close()
}

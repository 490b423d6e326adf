package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// planCommand prints the selector's cost table for a collective at any
// scale, and optionally one rank's plan, without launching anything.
func planCommand() *cli.Command {
	return &cli.Command{
		Name:      "plan",
		Usage:     "print every algorithm's predicted time for a collective, and the choice",
		UsageText: "hcclrun plan --np 64 --servers 8 --op allreduce --bytes 1M [--algo SPEC] [--rank R]",
		Description: `Prices every algorithm for one call with the runtime's cost model
(alpha-beta-gamma per link class; HCCL_TUNING_FILE overrides the constants,
HCCL_SHM_DISABLE and HCCL_SHM_DIRECT change what it prices as a job would)
under the HCCL_ALGO policy (or --algo), for up to 65536 ranks, and marks the
one the runtime would choose. A job with more ranks than a host's CPUs prices
its rounds from the hand-off the launcher measures on its host (the rank
table's handoff_ns, which "hcclrun ranktable -np N" prints); --handoff prices
as a job that measured that. With --rank, also prints that rank's plan of
the chosen algorithm step by step.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "np", Aliases: []string{"n"}, Value: 2, Usage: "number of ranks"},
			&cli.IntFlag{Name: "servers", Value: 1, Usage: "number of servers (ranks spread evenly, contiguously)"},
			&cli.StringFlag{Name: "layout", Usage: "ranks of each server, contiguous, e.g. 3+2+1 (sets --np and --servers)"},
			&cli.StringFlag{Name: "op", Aliases: []string{"o"}, Value: "allreduce", Usage: "collective: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, alltoallv, barrier"},
			&cli.StringFlag{Name: "bytes", Aliases: []string{"b"}, Value: "1M", Usage: "message size as the selector counts it (e.g. 8, 64K, 1M)"},
			&cli.StringFlag{Name: "algo", Usage: "algorithm policy in HCCL_ALGO's grammar (default: $HCCL_ALGO)"},
			&cli.IntFlag{Name: "rank", Value: -1, Usage: "also print this rank's plan (elements of 4 bytes)"},
			&cli.DurationFlag{Name: "handoff", Usage: "price as for a host whose shared core changes hands in this time (e.g. 3us; default: not measured)"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			coll, err := selector.ParseColl(c.String("op"))
			if err != nil {
				return launcher.Usagef("plan: --op: %v", err)
			}
			bytes, err := selector.ParseBytes(c.String("bytes"))
			if err != nil {
				return launcher.Usagef("plan: --bytes: %v", err)
			}
			if c.Duration("handoff") < 0 {
				return launcher.Usagef("plan: --handoff %v is negative", c.Duration("handoff"))
			}
			model, policy, err := selector.FromEnv(os.Getenv, c.Duration("handoff"))
			if err != nil {
				return err
			}
			if c.IsSet("algo") {
				if policy, err = selector.ParseAlgo(c.String("algo")); err != nil {
					return launcher.Usagef("plan: --algo: %v", err)
				}
			}
			np, servers := c.Int("np"), c.Int("servers")
			var sizes []int
			if c.IsSet("layout") {
				if sizes, err = parseLayout(c.String("layout")); err != nil {
					return launcher.Usagef("plan: --layout: %v", err)
				}
				np, servers = 0, len(sizes)
				for _, k := range sizes {
					np += k
				}
			}
			if np < 1 || np > selector.MaxRanks || servers < 1 || servers > np {
				return launcher.Usagef("plan: want 1 <= --servers <= --np <= %d", selector.MaxRanks)
			}
			if sizes == nil {
				for g := range servers { // as even as possible, the larger first
					sizes = append(sizes, np/servers+min(1, max(0, np%servers-g)))
				}
			}
			layout := plan.SizesLayout(sizes...)
			call := selector.Call{Coll: coll, Bytes: bytes, Topo: selector.TopoOf(np, layout)}
			table := selector.Predict(model, policy, call)
			fmt.Fprint(c.App.Writer, table.String())
			if _, err := table.Chosen(); err != nil {
				return err // the table says why; the exit status says it too
			}
			if r := c.Int("rank"); r >= 0 {
				return printPlan(c, table, coll, np, layout, bytes, r)
			}
			return nil
		},
	}
}

// printPlan prints rank r's plan of the chosen algorithm, for 4-byte
// elements.
func printPlan(c *cli.Context, table *selector.Table, coll plan.Coll, np int, layout *plan.Layout, bytes int64, r int) error {
	if r >= np {
		return launcher.Usagef("plan: --rank %d is not below --np %d", r, np)
	}
	chosen, err := table.Chosen()
	if err != nil {
		return err
	}
	a, _ := algo.Lookup(chosen.Algo)
	elems := int(bytes / 4)
	req := plan.Request{Coll: coll, Rank: r, Size: np, Count: elems, Layout: layout}
	switch coll {
	case plan.AllGather, plan.ReduceScatter, plan.AlltoAll:
		req.Count = elems / np
	case plan.AlltoAllV:
		per := elems / np
		req.SendCounts, req.SendDispls = make([]int, np), make([]int, np)
		req.RecvCounts, req.RecvDispls = make([]int, np), make([]int, np)
		for i := range np {
			req.SendCounts[i], req.SendDispls[i], req.RecvCounts[i], req.RecvDispls[i] = per, i*per, per, i*per
		}
	case plan.Barrier:
		req.Count = 0
	}
	p, err := a.Build(req)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "\n%s", strings.TrimRight(p.String(), "\n")+"\n")
	return nil
}

// parseLayout parses --layout: server sizes joined by "+", each at least 1.
func parseLayout(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, "+") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("%q: want server sizes of at least 1 joined by +, e.g. 3+2+1", s)
		}
		sizes = append(sizes, k)
		if len(sizes) > selector.MaxRanks {
			return nil, fmt.Errorf("more than %d servers", selector.MaxRanks)
		}
	}
	return sizes, nil
}

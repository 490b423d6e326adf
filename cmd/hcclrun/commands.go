package main

import "github.com/urfave/cli/v2"

// commands is the table of subcommands. Adding one is one entry here and a
// file of its own holding its constructor. The root command (launching a
// job) is not in the table: it is the App's Action, and a program whose name
// equals a subcommand's must be given with a path (./ranktable).
//
// Commands meant for other tools rather than users (the per-host agent that
// the SSH launcher starts) are marked Hidden: they run, but --help does not
// list them.
func commands() []*cli.Command {
	return []*cli.Command{
		ranktableCommand(),
		topoCommand(),
		topoRankCommand(),
		planCommand(),
		benchCommand(),
		statusCommand(),
		traceCommand(),
		agentCommand(),
	}
}

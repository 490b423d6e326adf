package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
	"github.com/hcclrun/hcclrun/ranktable"
)

// ranktableCommand prints the rank table a job would get, or validates one.
func ranktableCommand() *cli.Command {
	return &cli.Command{
		Name:      "ranktable",
		Usage:     "print the rank table a job would get, or check one",
		UsageText: "hcclrun ranktable -np N\n   hcclrun ranktable --check FILE",
		Description: `Without --check, prints the rank table (HCCL version 1.0 JSON plus hcclrun's
fields) that a job of N ranks on this machine gets, without launching
anything; the job id and control address are filled in at launch.
With --check, parses and validates FILE (a table of ours or one written for
HCCL) and prints "ok", or the error naming the offending field and value.`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "np", Aliases: []string{"n"}, Usage: "number of ranks"},
			&cli.StringFlag{Name: "check", Usage: "validate the rank table in `FILE`"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return launcher.Usagef("ranktable: unexpected argument %q", c.Args().First())
			}
			if c.IsSet("check") {
				if c.IsSet("np") {
					return launcher.Usagef("ranktable: give -np or --check, not both")
				}
				if _, err := ranktable.ReadFile(c.String("check")); err != nil {
					return err
				}
				_, err := fmt.Fprintln(c.App.Writer, "ok")
				return err
			}
			if !c.IsSet("np") {
				return launcher.Usagef("ranktable: missing -np N (or --check FILE)")
			}
			job := &launcher.Job{NP: c.Int("np")}
			t, err := job.RankTable("", "")
			if err != nil {
				return err
			}
			data, err := t.Marshal()
			if err != nil {
				return err
			}
			_, err = c.App.Writer.Write(data)
			return err
		},
	}
}

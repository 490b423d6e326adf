// Command hcclrun launches a job of N ranks, the way mpirun does, and hosts
// the subcommands that inspect what a job would get (ranktable, ...).
//
// This package is the CLI only: it turns flags into a launcher.Job (app.go),
// runs it with the signals routed (launch.go), keeps the table of
// subcommands (commands.go: status.go for a running job's status, trace.go
// for --trace and trace merge, report.go for --report), and is the one place that maps errors to exit
// codes and calls os.Exit (main.go).
package main

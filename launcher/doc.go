// Package launcher runs a job: it places ranks on hosts, writes the rank
// table, serves the control plane, starts every rank with its environment,
// relays their output and standard input, forwards signals, and tears the job
// down when a rank fails, when the job times out or when the user interrupts
// it.
//
// The pieces, one per file:
//
//   - Job (job.go) is the description of a job and Run (run.go) executes it:
//     the supervisor (supervisor.go) owns the job's state and reacts to
//     starts, exits, control-plane events, signals and timers; teardown.go
//     is how a job comes down; control.go adapts the netio/control server.
//   - Spawner and Process (spawner.go) are what Run needs from a host: start a
//     rank, signal its process group, wait for it. LocalSpawner (local.go)
//     starts ranks on this machine; the SSH agent provides another.
//   - ExitStatus (status.go) is how a rank ended; the errors Run returns
//     (errors.go) carry the summary a user sees and the exit code hcclrun
//     returns.
//   - The output relay (output.go) keeps every line of every rank whole and,
//     with tagging, prefixes it with the rank, as Open MPI's --tag-output does.
//   - The rank environment (env.go) is the contract of DESIGN.md.
//
// Failure semantics: the first rank that exits non-zero, dies by a signal or
// loses its control connection while its process lives is the job's failure.
// The launcher broadcasts abort on the control plane, sends SIGTERM to every
// other rank's process group and SIGKILL after the grace period, and Run
// returns a *RankError naming that rank. Nothing here calls os.Exit: mapping
// errors to exit codes is the CLI's business (see ExitCode).
package launcher

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
//     is how a job comes down; suspend.go stops and resumes it (Ctrl-Z);
//     farewell.go judges a rank's exit 0 against the control plane's news;
//     control.go adapts the netio/control server.
//   - Spawner and Process (spawner.go) are what Run needs from a host: start a
//     rank, signal its process group, wait for it. LocalSpawner (local.go)
//     starts ranks on this machine, its rank table in a directory locked
//     for its life so that sweeps of killed launchers' leftovers never take
//     a live one's, whatever PID namespace it runs in (stale.go); the agent
//     spawner (agentspawner.go) starts them on another host through
//     `hcclrun agent`.
//   - Multi-host jobs (remote.go): Job.Placement (from launcher/placement)
//     names the hosts; Run dials every remote one over SSH (launcher/ssh),
//     starts one agent per host before any rank, so that a refused host key,
//     user or key starts nothing anywhere, runs the ranks of a host that is
//     this machine directly, and binds the control plane to the address this
//     machine has towards the hosts (never to every interface).
//   - Jobs inside a Slurm allocation (slurm.go, Remote.Slurm): one srun
//     step starts an agent on every node of the placement (one task per
//     node, --kill-on-bad-exit), this machine's included, so that the
//     ranks live in Slurm's step; each agent dials back over TCP,
//     authenticated with a fresh link key srun copies to the agents' stdin
//     (DialLauncher), and the agent protocol runs over that connection.
//     The step ends when the agents say goodbye, else srun is stopped.
//   - The agent (agent.go, RunAgent) and its protocol (agentproto.go):
//     length-prefixed frames over the SSH session's stdin and stdout, the
//     job key inside them (never on a command line), heartbeats both ways.
//     The agent starts its host's ranks with a LocalSpawner and kills them
//     when its link ends (stdin EOF, silence, a signal), because neither
//     sshd nor SSH signals can be trusted to; the launcher turns a lost link
//     into a *HostLostError naming the host and its ranks.
//   - The status of a running job (jobstatus.go): SIGUSR1, or hcclrun
//     status through a unix socket the launcher serves, prints which call
//     each rank is in and which peer it waits for, from the control
//     plane's view of the heartbeats; Job.Collect hands the launcher's
//     caller what the ranks left on the control plane (hcclrun --report).
//   - ExitStatus (status.go) is how a rank ended; the errors Run returns
//     (errors.go) carry the summary a user sees and the exit code hcclrun
//     returns.
//   - The output relay (output.go) keeps every line of every rank whole and,
//     with tagging, prefixes it with the rank, as Open MPI's --tag-output does.
//   - The rank environment (env.go) is the contract of DESIGN.md.
//   - CPU binding (bind.go): ranks are bound to CPUs as mpirun binds them
//     (Job.Bind, --bind-to): each gets its block of its host's CPUs (the
//     launcher's, or those a remote host's agent reported), written to the
//     rank table's cpu_list, unless they outnumber the CPUs. The spawning
//     thread takes the rank's binding just for the fork, so the rank
//     inherits it; threads.go sets GOMAXPROCS for oversubscribed hosts.
//   - The hand-off of a shared core (handoff.go): when some host has more
//     ranks than CPUs, the launcher times on its own host how long a core
//     takes to change hands between two waiters (handoff.Measure, about
//     a millisecond) and writes it to the rank table's handoff_ns, from
//     which every rank's cost model prices its oversubscribed rounds alike
//     (runtime/selector, SlowHost).
//
// Failure semantics: the first rank that exits non-zero, dies by a signal or
// loses its control connection while its process lives is the job's failure;
// so is a rank that exits 0 owing its peers (farewell.go): one that joined
// the job (Init) and never called Close, or one that never joined while
// others did, as Open MPI fails a rank that exits without finalize.
// The launcher broadcasts abort on the control plane, sends SIGTERM to every
// other rank's process group and SIGKILL after the grace period, and Run
// returns a *RankError naming that rank. Nothing here calls os.Exit: mapping
// errors to exit codes is the CLI's business (see ExitCode).
package launcher

// Package selector chooses, for one collective call, the algorithm, the
// channel count and the segment size, from an alpha-beta-gamma cost model
// per link class, and honours HCCL_ALGO when it forces or excludes
// algorithms.
//
// The model prices a plan as latencies (alpha, per message), bytes (beta,
// per byte on the critical path), reductions (gamma, per byte reduced) and
// local copies. Each algorithm's counts come from a closed formula per
// collective in its own file, shape_<algorithm>.go, registered against
// the algorithm's name in runtime/algo's registry; the tests hold them to
// the plans the algorithms really build (plan.Simulate's round and byte
// counts). Closed formulas, not plan walks, so that a 65536-rank job is
// priced in microseconds.
//
// With a core per rank, the first bytes of each round over shm cost more
// than the streaming rate (Model.Head). Byte work is slowed by the ranks
// at work that a server's cores are shared among (a waiting rank sleeps
// and leaves its core) and by how far the call's working set outgrows the
// caches (memory.go). With ranks beyond the cores, a dependent round costs
// a wake-up, whose price depends on how fast the host's cores change
// hands: the launcher measures that once per job and every rank prices
// with it (handoff.go).
//
// The constants are a table, default.tuning, in the grammar of a tuning
// file (ParseTuning); docs/selector.md says what each term prices and
// where each constant comes from, and has the predicted-vs-measured
// tables. What a job's configuration decides beyond the constants (the
// policy, a tuning file, what the links do, the host) is Settings, which
// the runtime fills from its knobs and FromEnv from an environment, for
// tools that price calls without running them.
//
// Everything here is pure except Selector's cache and its log lines: the
// CLI prints the same cost table a running job would use, without
// launching anything.
package selector

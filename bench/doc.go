// Package bench is `hcclrun bench`: an nccl-tests-style benchmark of the
// runtime's collectives, run as a job of N ranks that hcclrun starts from
// its own executable.
//
//	hcclrun bench -np 2 -o allreduce -b 8 -e 64M -f 2
//
// # Two halves
//
// The command the user types (Command) is the parent: it checks the flags,
// starts the job through launcher.Job with Program = os.Executable() and
// the hidden sub-command `bench rank SPEC`, and formats what the ranks
// report. Each rank (rank.go) joins the job with hccl.Init, sweeps the sizes
// of every requested collective and, on rank 0, writes one record per row
// to its standard output. The parent picks those records out of the job's
// output (records.go), prints them as nccl-tests does (table.go) and writes
// --json and --plot at the end. The files therefore land where the user
// ran hcclrun, whichever host rank 0 runs on. --plot is drawn by the
// hcclrun-plot command (cmd/hcclrun-plot, a module of its own), found next
// to hcclrun or on PATH: linking the plotting library into hcclrun would
// cost every start of it its package initialisation
// (docs/measurements.md#the-plot-apart).
//
// # Semantics (the same as bench/mpi/mpibench.c, so the two compare)
//
// Sizes go from -b to -e, times -f (or plus -i). For each size, each
// collective derives its element counts as nccl-tests does (Layout): the
// count is rounded down to a multiple of the rank count where the
// collective splits its buffer, and the size column is the larger of the
// send and receive buffers. For each size and for out-of-place then in-place
// (AlltoAll and AlltoAllV have no in-place form here, as in HCCL), a rank
// fills its buffers, runs -w untimed iterations, meets the others at a
// Barrier, then times -n iterations back to back. time is the mean over
// those iterations, taken as the maximum over ranks; the JSON also keeps the
// median iteration (again the maximum over ranks). algbw is size/time; busbw
// is algbw times nccl-tests' factor (BusFactor). With -c 1 every rank then
// refills its buffers, runs the collective once more and compares every
// element of the result with the exact expected value (pattern.go: small
// integers whose sums, products and averages are exact in every element
// type); #wrong is the number of differing elements summed over ranks.
//
// # Comparing algorithms (--algos)
//
// With --algos the job alternates the listed algorithms (forced with
// Comm.SetAlgo, "auto" being the selector's choice) in --rounds rounds at
// every size, so that a shared machine's changes of speed hit them alike;
// each gets a row, with the median of its rounds' means (algos.go). A name
// with +trace (auto+trace) runs that algorithm with the ranks' HCCL_TRACE
// recording on and the others with it off (Comm.SetTracing), which is how
// docs/performance.md#tracing-overhead measures tracing's cost.
// bench/calibrate measures the selector's model this way.
//
// # A fresh job's first calls (--first)
//
// The sweep above warms its first case up at length (warmUpJob) so that the
// rows show the steady state. --first N shows the calls that warm-up
// hides, which are what a short program pays: the parent runs every
// (collective, size) as a job of its own, one after another, so that each
// meets a runtime just initialised. Its ranks call Init, allocate and fill
// their buffers (out of place only), meet at one Barrier and time N calls
// back to back with no warm-up, as mpibench -w 0 -n N does; with -c 1 one
// more call is checked. Call k's time is the latest end of call k over the
// ranks minus the latest end of call k-1, each rank's clock starting as it
// leaves the Barrier (first.go): the first is the slowest rank's first
// call, and the mean of the N is the slowest rank's mean, the time column
// of the normal mode and of mpibench. A row gives the first call, the mean,
// the median and the slowest, and #wrong; comment lines under it list the N
// times and the job's pids, and --json keeps them (calls_us, job).
// bench/compare's "first" case compares these means with the MPIs'.
//
// # A training step, one by one and as a graph (--graph)
//
//	hcclrun bench -np 4 --graph [--step 64x16K,4x4M] [-n 20] [-w 5] [--rounds 5]
//
// --graph times a step's gradient exchange instead of one collective
// (step.go): the AllReduces of --step, COUNTxBYTES,... in order (default
// issue 36's 64 of 16 KiB then 4 of 4 MiB), in place, each on a buffer of
// its own (-R, -d and --redop apply), made one by one with hccl.AllReduce
// (row "calls") and recorded once into a graph, compiled and replayed with
// Executable.Run (row "graph"). The two alternate in --rounds rounds within
// the job, calls first in even rounds; each round gives a mode -w untimed
// steps, a Barrier and -n timed steps, whose mean and median, each the
// maximum over ranks, are the round's; a row gives the median over rounds
// of both (as --algos), the collectives a step makes (the graph's after
// fusion), algbw and busbw of the step's bytes, and with -c 1 #wrong: every
// buffer filled with the pattern (buffer k's element i being the pattern's
// element i plus the elements of the buffers before, so that a graph that
// mixed its buffers up in the fused staging is caught), one step, every
// element compared. A last comment line gives calls/graph and the graph's
// Compile time; --json keeps the rows under "steps". mpibench --step is the
// MPI twin of the calls row, and bench/graphstep runs them side by side
// (docs/performance.md#graph-mode).
//
// nccl-tests itself reports the mean over ranks by default (-a 1); this
// benchmark reports the maximum (nccl-tests' -a 3), which is what the
// slowest rank, and so the application, sees.
package bench

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hcclrun/hcclrun/launcher"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// Config is what the CLI hands the bench command.
type Config struct {
	// Launch runs the benchmark job; the CLI passes the function that
	// routes SIGINT and SIGTERM to the job. nil calls job.Run.
	Launch func(ctx context.Context, job *launcher.Job) error
	// OnUsageError turns a flag parsing error into the CLI's usage error
	// (exit status 2); nil leaves urfave/cli's default.
	OnUsageError cli.OnUsageErrorFunc
}

// rankCommandName is the hidden sub-command every rank runs:
// `hcclrun bench rank SPEC`.
const rankCommandName = "rank"

// Command returns the `bench` command: it starts the benchmark as a job of
// -np ranks of this executable and prints the results as nccl-tests does.
func Command(cfg Config) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "benchmark the collectives, nccl-tests style",
		UsageText: "hcclrun bench [-np N] [-o OP] [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS] [-w WARMUP]\n" +
			"                [-c 0|1] [-R 0|1] [-d TYPE] [--redop OP] [-r ROOT] [--algos LIST [--rounds R] | --first N]\n" +
			"                [--json FILE] [--plot FILE.svg|.png]\n" +
			"hcclrun bench --graph [--step COUNTxBYTES,...] [-np N] [-n ITERS] [-w WARMUP] [--rounds R] [-c 0|1] [-R 0|1]\n" +
			"                [-d TYPE] [--redop OP] [--json FILE]",
		Description: `Runs the collective OP on N ranks of this machine for every size from MIN to
MAX bytes, and prints for each size, out of place and in place: the mean time
of one iteration (the slowest rank's), the algorithm bandwidth (size/time) and
the bus bandwidth (algbw times nccl-tests' factor: 2(n-1)/n for allreduce,
(n-1)/n for allgather, reducescatter, alltoall and alltoallv, 1 for broadcast
and reduce), and the number of result elements that differ from the exact
expected value (-c 1). OP is allreduce, allgather, reducescatter, alltoall,
alltoallv, broadcast, reduce, a comma-separated list, or all. The runtime's
knobs (HCCL_ALGO, HCCL_SHM_DISABLE, HCCL_BUFFSIZE, ...) apply as to any job.

The buffers come from runtime.MemAlloc (-R 1, the default, as nccl-tests -R 1
registers its buffers): memory a rank's peers on the host map, so that they
copy large payloads straight out of it. -R 0 makes them plain Go slices, which
peers read with process_vm_readv, as an MPI reads a malloc'd buffer.

--algos ring,rhd,auto compares algorithms within the one job: each size is
measured in R rounds (--rounds, 5), each round running every listed
algorithm (auto: the selector's choice) in turn, so that a machine whose speed
changes meanwhile slows them alike; a row per algorithm gives the median of
its rounds' means (the JSON keeps each round's, samples_us).

--first N shows a fresh job's first calls, which the normal mode hides by
warming the runtime up before it times (the first case of a job runs
hundreds of untimed calls). Every (collective, size) runs in a job of its
own, whose ranks call Init, fill their buffers (out of place only; -R, -d,
--redop and -r apply), meet at one Barrier and time N calls back to back with
no warm-up, as mpibench -w 0 -n N does; -c 1 then checks one more call. A
call's time is when the last rank finished it minus when the last rank
finished the call before (each rank's clock starting as it leaves the
Barrier): the first is the slowest rank's first call, and the mean of the N
is the slowest rank's mean, as in the normal mode and mpibench. A row per
case gives the first call, the mean, the median and the slowest of the N and
#wrong; a line under it lists the N times, another the job's pids. --json
keeps them (calls_us, job). -n, -w, --algos, --rounds, --plot and
--cpuprofile are usage errors with --first; --timeout limits each case's job.

--graph times a training step's gradient exchange instead of one collective:
the AllReduces of --step (default 64x16K,4x4M: 64 of 16 KiB then 4 of 4 MiB,
issue 36's step), in place, each on a buffer of its own, made one by one
(row "calls") and recorded once as a graph, compiled and replayed with
Executable.Run (row "graph"). The two alternate in R rounds (--rounds, 5)
within the job; each round gives each -w untimed steps, a Barrier and -n
timed steps. A row gives the collectives a step makes (the graph's after
fusion), the step's bytes and elements, the median over rounds of the mean
and of the median step (each the slowest rank's), algbw and busbw of the
step's bytes, and #wrong (-c 1: every buffer filled with the pattern, one
step, every element compared exactly). A last line gives calls/graph and
the graph's compile time. -o, -b, -e, -f, -i, -r, --algos, --first and --plot
are usage errors with --graph. bench/mpi/mpibench.c --step is its MPI twin,
bench/graphstep runs the two side by side.

Exit status: 0, 1 when an element was wrong or the job failed, 2 for a usage
error, 124 when --timeout expired.

Examples:
   hcclrun bench -np 2 -o allreduce -b 8 -e 64M -f 2
   hcclrun bench -np 4 -o all -b 1K -e 16M --json out.json --plot busbw.svg
   HCCL_SHM_DISABLE=1 hcclrun bench -np 2 -b 1M -e 1M -n 50
   hcclrun bench -np 4 -o allgather -b 8 -e 1M -f 4 --algos ring,rhd,mesh,pat,auto
   hcclrun bench -np 2 -o allreduce,allgather -b 8 -e 1M -f 1024 --first 10 -R 0
   hcclrun bench -np 4 --graph -n 20 --rounds 5 --json step.json`,
		Flags:        benchFlags(),
		OnUsageError: cfg.OnUsageError,
		Action:       func(c *cli.Context) error { return runParent(c, cfg) },
		Subcommands: []*cli.Command{{
			Name:            rankCommandName,
			Hidden:          true,
			Usage:           "one rank of a benchmark job (started by hcclrun bench)",
			HideHelpCommand: true,
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return launcher.Usagef("bench rank: want one SPEC argument, got %d", c.NArg())
				}
				var sp spec
				if err := json.Unmarshal([]byte(c.Args().First()), &sp); err != nil {
					return launcher.Usagef("bench rank: bad spec: %v", err)
				}
				return runRank(c.Context, sp, c.App.Writer)
			},
		}},
		HideHelpCommand: true,
	}
}

func benchFlags() []cli.Flag {
	return []cli.Flag{
		// The job.
		&cli.IntFlag{Name: "np", Usage: "number of ranks", DefaultText: "one per CPU"},
		&cli.StringSliceFlag{Name: "x", Usage: "export `VAR` (or set VAR=value) in every rank; repeatable"},
		&cli.StringFlag{Name: "timeout", Usage: "stop the job after `DURATION` (90s, 10m; a bare number is seconds) and exit 124"},
		&cli.StringFlag{Name: "grace", Usage: "delay between SIGTERM and SIGKILL when the job is torn down (`DURATION`)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log the launcher's decisions to stderr"},
		// The sweep, with nccl-tests' letters (but -o picks the collective;
		// the reduction is --redop).
		&cli.StringFlag{Name: "op", Aliases: []string{"o"}, Value: "allreduce", Usage: "collective(s): allreduce, allgather, reducescatter, alltoall, alltoallv, broadcast, reduce, a list, or all"},
		&cli.StringFlag{Name: "minbytes", Aliases: []string{"b"}, Value: "8", Usage: "smallest size (`BYTES`, K/M/G suffixes)"},
		&cli.StringFlag{Name: "maxbytes", Aliases: []string{"e"}, Value: "32M", Usage: "largest size (`BYTES`)"},
		&cli.IntFlag{Name: "stepfactor", Aliases: []string{"f"}, Value: 2, Usage: "multiply the size by `F` at each step"},
		&cli.StringFlag{Name: "stepbytes", Aliases: []string{"i"}, Usage: "add `BYTES` at each step instead of -f"},
		&cli.IntFlag{Name: "iters", Aliases: []string{"n"}, Value: 20, Usage: "timed iterations per size (steps per round with --graph)"},
		&cli.IntFlag{Name: "warmup_iters", Aliases: []string{"w"}, Value: 5, Usage: "untimed iterations per size before the timed ones (steps per round with --graph)"},
		&cli.IntFlag{Name: "check", Aliases: []string{"c"}, Value: 1, Usage: "1 checks every result element exactly, 0 does not"},
		&cli.IntFlag{Name: "local_register", Aliases: []string{"R"}, Value: 1, Usage: "1 allocates the buffers with runtime.MemAlloc (memory peers on the host map), 0 as ordinary Go slices"},
		&cli.StringFlag{Name: "datatype", Aliases: []string{"d"}, Value: "float", Usage: "element type: float, double, half, bfloat16, int8, uint8, int16, uint16, int32, uint32, int64, uint64"},
		&cli.StringFlag{Name: "redop", Value: "sum", Usage: "reduction: sum, prod, max, min, avg (avg: floating types)"},
		&cli.IntFlag{Name: "root", Aliases: []string{"r"}, Value: 0, Usage: "root of broadcast and reduce"},
		&cli.StringFlag{Name: "algos", Usage: "compare the algorithms of `LIST` (ring,rhd,mesh,oneshot,pat,tree,auto; NAME+trace runs NAME with HCCL_TRACE recording on, which needs -x HCCL_TRACE=DIR) within the job"},
		&cli.IntFlag{Name: "rounds", Value: 5, Usage: "with --algos or --graph, measure each algorithm or mode `R` times, interleaved"},
		&cli.IntFlag{Name: "first", Usage: "time the first `N` calls of a fresh job per collective and size, with no warm-up (-n and -w are refused)", DefaultText: "off"},
		&cli.BoolFlag{Name: "graph", Usage: "time --step's AllReduces made one by one and as one compiled graph, in rounds (-o, -b, -e, -f, -i, -r are refused)"},
		&cli.StringFlag{Name: "step", Value: DefaultStep, Usage: "with --graph, the step's AllReduces: `COUNTxBYTES`,... in order"},
		&cli.StringFlag{Name: "json", Usage: "write every row to `FILE` as JSON"},
		&cli.StringFlag{Name: "plot", Usage: "draw busbw against size to `FILE` (.svg or .png)"},
		&cli.StringFlag{Name: "cpuprofile", Usage: "write each rank's CPU profile to `DIR`/rank-N.pprof"},
	}
}

// options is the parent's view of the command line.
type options struct {
	spec
	np       int
	colls    []Coll
	dt       DType
	jsonPath string
	plotPath string
	header   string // the first header line
}

// plotTitle names what the plot shows; the header is too long for it.
func (o *options) plotTitle() string {
	return fmt.Sprintf("hcclrun bench: %d ranks, %s, out-of-place busbw (%d iters)", o.np, o.DType, o.Iters)
}

func parseOptions(c *cli.Context) (*options, error) {
	if c.Args().Present() {
		return nil, launcher.Usagef("bench: unexpected argument %q", c.Args().First())
	}
	o := &options{np: goruntime.NumCPU(), jsonPath: c.String("json"), plotPath: c.String("plot")}
	if c.IsSet("np") {
		o.np = c.Int("np")
	}
	if o.np < 1 {
		return nil, launcher.Usagef("bench: -np must be at least 1, got %d", o.np)
	}
	var err error
	if o.colls, err = ParseColls(c.String("op")); err != nil {
		return nil, launcher.Usagef("bench: -o: %v", err)
	}
	for _, cl := range o.colls {
		o.Colls = append(o.Colls, cl.String())
	}
	minB, err := selector.ParseBytes(c.String("minbytes"))
	if err != nil {
		return nil, launcher.Usagef("bench: -b: %v", err)
	}
	maxB, err := selector.ParseBytes(c.String("maxbytes"))
	if err != nil {
		return nil, launcher.Usagef("bench: -e: %v", err)
	}
	factor, step := c.Int("stepfactor"), int64(0)
	if c.IsSet("stepbytes") {
		if c.IsSet("stepfactor") {
			return nil, launcher.Usagef("bench: give -f or -i, not both")
		}
		if step, err = selector.ParseBytes(c.String("stepbytes")); err != nil {
			return nil, launcher.Usagef("bench: -i: %v", err)
		}
		factor = 1
	}
	if o.Sizes, err = Sizes(minB, maxB, factor, step); err != nil {
		return nil, launcher.Usagef("bench: %v", err)
	}
	o.Iters, o.Warmup = c.Int("iters"), c.Int("warmup_iters")
	if o.Iters < 1 || o.Warmup < 0 {
		return nil, launcher.Usagef("bench: -n must be at least 1 and -w at least 0, got %d and %d", o.Iters, o.Warmup)
	}
	if o.Check, err = zeroOrOne(c, "check", "c"); err != nil {
		return nil, err
	}
	if o.Register, err = zeroOrOne(c, "local_register", "R"); err != nil {
		return nil, err
	}
	if o.dt, err = ParseDType(c.String("datatype")); err != nil {
		return nil, launcher.Usagef("bench: -d: %v", err)
	}
	o.DType = o.dt.Name
	op, err := ParseRedOp(c.String("redop"))
	if err != nil {
		return nil, launcher.Usagef("bench: --redop: %v", err)
	}
	if op.Name == "avg" && !o.dt.floating() {
		return nil, launcher.Usagef("bench: --redop avg needs a floating type, not %s", o.dt.Name)
	}
	o.RedOp = op.Name
	o.Root = c.Int("root")
	if o.Root < 0 || o.Root >= o.np {
		return nil, launcher.Usagef("bench: -r %d is not a rank of %d", o.Root, o.np)
	}
	if o.plotPath != "" {
		if err := checkPlotPath(o.plotPath); err != nil {
			return nil, launcher.Usagef("bench: %v", err)
		}
	}
	o.CPUProfile = c.String("cpuprofile")
	if c.Bool("graph") {
		if err := o.setGraph(c); err != nil {
			return nil, err
		}
	} else if c.IsSet("step") {
		return nil, launcher.Usagef("bench: --step needs --graph")
	}
	if c.IsSet("algos") {
		if o.Algos, err = ParseAlgos(c.String("algos"), o.colls); err != nil {
			return nil, launcher.Usagef("bench: --algos: %v", err)
		}
		if o.Rounds = c.Int("rounds"); o.Rounds < 1 {
			return nil, launcher.Usagef("bench: --rounds must be at least 1, got %d", o.Rounds)
		}
	} else if c.IsSet("rounds") && len(o.Step) == 0 {
		return nil, launcher.Usagef("bench: --rounds needs --algos or --graph")
	}
	if c.IsSet("first") {
		if err := o.setFirst(c); err != nil {
			return nil, err
		}
	}
	how := fmt.Sprintf("%d(factor)", factor)
	if factor == 1 {
		how = fmt.Sprintf("%d(bytes)", step)
	}
	o.header = fmt.Sprintf("hcclrun bench %s: %d ranks, minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d validation: %d local register: %d",
		strings.Join(o.Colls, ","), o.np, minB, maxB, how, o.Warmup, o.Iters, c.Int("check"), c.Int("local_register"))
	if len(o.Algos) > 0 {
		o.header += fmt.Sprintf(" algos: %s rounds: %d", strings.Join(o.Algos, ","), o.Rounds)
	}
	if o.First > 0 {
		o.header = fmt.Sprintf("hcclrun bench %s: %d ranks, minBytes %d maxBytes %d step: %s first calls: %d (a fresh job per case, no warm-up, out of place) validation: %d local register: %d",
			strings.Join(o.Colls, ","), o.np, minB, maxB, how, o.First, c.Int("check"), c.Int("local_register"))
	}
	if len(o.Step) > 0 {
		o.header = fmt.Sprintf("hcclrun bench --graph: %d ranks, step %s (%d AllReduces, in place) %s %s warmup iters: %d iters: %d rounds: %d validation: %d local register: %d",
			o.np, o.StepSpec, len(o.Step), o.DType, o.RedOp, o.Warmup, o.Iters, o.Rounds, c.Int("check"), c.Int("local_register"))
	}
	return o, nil
}

// setGraph reads --graph's flags and refuses those of the sweep.
func (o *options) setGraph(c *cli.Context) error {
	for _, f := range []struct{ name, flag string }{
		{"op", "-o"}, {"minbytes", "-b"}, {"maxbytes", "-e"}, {"stepfactor", "-f"}, {"stepbytes", "-i"},
		{"root", "-r"}, {"algos", "--algos"}, {"first", "--first"}, {"plot", "--plot"},
	} {
		if c.IsSet(f.name) {
			return launcher.Usagef("bench: %s does not go with --graph (which times --step's AllReduces)", f.flag)
		}
	}
	var err error
	o.StepSpec = c.String("step")
	if o.Step, err = ParseStep(o.StepSpec, o.dt.Size); err != nil {
		return launcher.Usagef("bench: --step: %v", err)
	}
	if o.Rounds = c.Int("rounds"); o.Rounds < 1 {
		return launcher.Usagef("bench: --rounds must be at least 1, got %d", o.Rounds)
	}
	o.colls, o.Colls, o.Sizes = nil, nil, nil
	return nil
}

// setFirst reads --first and refuses the flags that do not go with it.
func (o *options) setFirst(c *cli.Context) error {
	if o.First = c.Int("first"); o.First < 1 {
		return launcher.Usagef("bench: --first must be at least 1, got %d", o.First)
	}
	for _, f := range []struct{ name, flag string }{
		{"iters", "-n"}, {"warmup_iters", "-w"}, {"algos", "--algos"}, {"rounds", "--rounds"},
		{"plot", "--plot"}, {"cpuprofile", "--cpuprofile"},
	} {
		if c.IsSet(f.name) {
			return launcher.Usagef("bench: %s does not go with --first (which times the first N calls of a fresh job per case, with no warm-up)", f.flag)
		}
	}
	o.Iters, o.Warmup = o.First, 0
	return nil
}

// zeroOrOne reads the 0-or-1 flag name (-letter) as a bool.
func zeroOrOne(c *cli.Context, name, letter string) (bool, error) {
	switch v := c.Int(name); v {
	case 0, 1:
		return v == 1, nil
	default:
		return false, launcher.Usagef("bench: -%s must be 0 or 1, got %d", letter, v)
	}
}

// runParent is the bench command: it runs the job and prints what rank 0
// reports as it arrives.
func runParent(c *cli.Context, cfg Config) error {
	o, err := parseOptions(c)
	if err != nil {
		return err
	}
	if o.First > 0 {
		return runFirst(c, cfg, o)
	}
	if len(o.Step) > 0 {
		return runStep(c, cfg, o)
	}
	job, err := jobFor(c, o.spec, o.np)
	if err != nil {
		return err
	}
	out := c.App.Writer
	rep := &report{out: out, o: o}
	demux := &recordDemux{out: out, handle: rep.handle}
	job.Stdout = demux
	fmt.Fprintf(out, "# %s\n", o.header)
	runErr := launchFunc(cfg)(c.Context, job)
	demuxErr := demux.Close()
	if runErr != nil {
		return runErr
	}
	if demuxErr != nil {
		return demuxErr
	}
	want := len(o.colls) * len(o.Sizes) * max(1, len(o.Algos))
	if len(rep.rows) != want {
		return fmt.Errorf("bench: the job ended after %d of %d rows", len(rep.rows), want)
	}
	return rep.finish()
}

// launchFunc is how cfg runs a job.
func launchFunc(cfg Config) func(ctx context.Context, job *launcher.Job) error {
	if cfg.Launch != nil {
		return cfg.Launch
	}
	return func(ctx context.Context, job *launcher.Job) error { return job.Run(ctx) }
}

// jobFor builds the launcher job: np ranks of this very executable, each
// running the hidden rank sub-command with spec.
func jobFor(c *cli.Context, spec spec, np int) (*launcher.Job, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: find this executable to start the ranks: %w", err)
	}
	sp, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	timeout, err := parseDuration(c.String("timeout"))
	if err != nil {
		return nil, launcher.Usagef("bench: --timeout: %v", err)
	}
	grace, err := parseDuration(c.String("grace"))
	if err != nil {
		return nil, launcher.Usagef("bench: --grace: %v", err)
	}
	level := slog.LevelWarn
	if c.Bool("verbose") {
		level = slog.LevelDebug
	}
	return &launcher.Job{
		Program: self,
		Args:    []string{"bench", rankCommandName, string(sp)},
		NP:      np,
		Export:  c.StringSlice("x"),
		Timeout: timeout,
		Grace:   grace,
		Stderr:  c.App.ErrWriter,
		Logger:  slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level})),
	}, nil
}

// parseDuration reads 90s, 10m or a bare number of seconds; "" is 0.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("%q is negative", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a duration such as 90s or 10m, or seconds", s)
	}
	return d, nil
}

// report prints the records of rank 0 and keeps the rows.
type report struct {
	out   io.Writer
	o     *options
	rows  []Row
	steps []StepRow // --graph
}

func (r *report) handle(rec record) error {
	switch rec.Kind {
	case "ranks":
		fmt.Fprintf(r.out, "#\n# Using ranks\n")
		for _, ri := range rec.Ranks {
			fmt.Fprintf(r.out, "#  Rank %2d Pid %6d on %10s\n", ri.Rank, ri.Pid, ri.Host)
		}
	case "start":
		fmt.Fprintf(r.out, "#\n# Collective: %s\n", rec.Coll)
		writeTableHeader(r.out, len(r.o.Algos) > 0)
	case "row":
		if rec.Row == nil {
			return errors.New("bench: a row record without a row")
		}
		r.rows = append(r.rows, *rec.Row)
		fmt.Fprintln(r.out, formatRow(rec.Row))
	default:
		return fmt.Errorf("bench: unknown record kind %q from rank 0", rec.Kind)
	}
	return nil
}

// finish prints nccl-tests' closing lines, writes --json and --plot, and
// fails when any element was wrong.
func (r *report) finish() error {
	var wrong int64
	var bw float64
	var nbw int
	for _, row := range r.rows {
		for _, res := range []*Result{&row.OutOfPlace, row.InPlace} {
			if res == nil {
				continue
			}
			if res.Wrong > 0 {
				wrong += res.Wrong
			}
			bw += res.BusBW
			nbw++
		}
	}
	for _, st := range r.steps {
		wrong += max(st.Wrong, 0)
	}
	verdict := "OK"
	if wrong > 0 {
		verdict = "FAILED"
	}
	fmt.Fprintf(r.out, "# Out of bounds values : %d %s\n", wrong, verdict)
	if nbw > 0 && r.o.First == 0 && len(r.steps) == 0 {
		fmt.Fprintf(r.out, "# Avg bus bandwidth    : %.5g \n", bw/float64(nbw))
	}
	fmt.Fprintf(r.out, "#\n")
	if r.o.jsonPath != "" {
		if err := r.writeJSON(); err != nil {
			return err
		}
	}
	if r.o.plotPath != "" {
		if err := writePlot(r.o.plotPath, r.o.plotTitle(), r.rows); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
	}
	if wrong > 0 {
		return fmt.Errorf("bench: %d result elements differ from the expected values", wrong)
	}
	return nil
}

// jsonReport is the --json file.
type jsonReport struct {
	Header string    `json:"header"`
	Date   time.Time `json:"date"`
	Ranks  int       `json:"ranks"`
	Iters  int       `json:"iters"`
	Warmup int       `json:"warmup"`
	DType  string    `json:"dtype"`
	Algos  []string  `json:"algos,omitempty"`
	Rounds int       `json:"rounds,omitempty"`
	First  int       `json:"first,omitempty"` // --first: iters is the calls timed in each fresh job
	Rows   []Row     `json:"rows"`
	Steps  []StepRow `json:"steps,omitempty"` // --graph: a row per mode; rows is empty
}

func (r *report) writeJSON() error {
	data, err := json.MarshalIndent(jsonReport{
		Header: r.o.header, Date: time.Now().UTC(), Ranks: r.o.np,
		Iters: r.o.Iters, Warmup: r.o.Warmup, DType: r.o.DType, Algos: r.o.Algos, Rounds: r.o.Rounds, First: r.o.First, Rows: r.rows, Steps: r.steps,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(r.o.jsonPath, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: --json: %w", err)
	}
	return nil
}

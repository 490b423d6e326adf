package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	hccl "github.com/hcclrun/hcclrun/runtime"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// --graph times a training step's gradient exchange rather than one
// collective: --step's AllReduces (in place, each on a buffer of its own,
// in the order listed) made one by one with hccl.AllReduce ("calls") and
// recorded once into a graph, compiled and replayed with Executable.Run
// ("graph"). Both modes run in the one job, in --rounds rounds, the order
// of the two alternating from round to round, so that a shared machine's
// changes of speed hit them alike; each round gives each mode -w untimed
// steps, a Barrier and -n timed steps, the mean and the median step being
// the maximum over ranks, and a mode's row the median of its rounds' (as
// --algos, combineRounds). bench/mpi/mpibench.c --step is the MPI twin of
// the "calls" row (issue 36's comparison with Open MPI).

// DefaultStep is issue 36's step: 64 AllReduces of 16 KiB, then 4 of 4 MiB.
const DefaultStep = "64x16K,4x4M"

// ParseStep reads a --step value, a comma-separated list of COUNTxBYTES
// (or BYTES for one call), and returns every call's size in bytes, in
// order. Each size must be a whole number of elemSize-byte elements.
func ParseStep(s string, elemSize int) ([]int64, error) {
	var sizes []int64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		count, size := int64(1), part
		if c, rest, ok := strings.Cut(part, "x"); ok {
			n, err := strconv.ParseInt(c, 10, 32)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%q: want COUNTxBYTES with a count of at least 1", part)
			}
			count, size = n, rest
		}
		b, err := selector.ParseBytes(size)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", part, err)
		}
		if b < int64(elemSize) || b%int64(elemSize) != 0 {
			return nil, fmt.Errorf("%q: %d bytes is not a whole number of %d-byte elements", part, b, elemSize)
		}
		if int64(len(sizes))+count > maxStepCalls {
			return nil, fmt.Errorf("more than %d calls in the step %q", maxStepCalls, s)
		}
		for range count {
			sizes = append(sizes, b)
		}
	}
	return sizes, nil
}

// maxStepCalls bounds a step, whose call sizes travel in the rank's spec.
const maxStepCalls = 4096

// Step modes, the rows of --graph.
const (
	stepCalls = "calls"
	stepGraph = "graph"
)

// StepRow is one row of --graph: one mode of the step.
type StepRow struct {
	Mode  string `json:"mode"` // "calls" or "graph"
	Ranks int    `json:"ranks"`
	Step  string `json:"step"`       // the --step value
	Bytes int64  `json:"size_bytes"` // the step's payload, summed over its calls
	Count int64  `json:"count"`      // elements, summed over the calls
	Type  string `json:"type"`
	RedOp string `json:"redop"`
	// Colls is the collectives a step makes: the recorded calls, or the
	// graph's after fusion (Executable.Steps).
	Colls int `json:"collectives"`
	// CompileUS is the graph's Compile, the slowest rank's (graph only).
	CompileUS float64 `json:"compile_us,omitempty"`
	// The step's times: time_us the median of the rounds' mean steps,
	// median_us of their median steps, samples_us the rounds' means.
	Result
}

// runStep is the parent of --graph: one job, whose rank 0 sends a row per
// mode.
func runStep(c *cli.Context, cfg Config, o *options) error {
	j, err := jobFor(c, o.spec, o.np)
	if err != nil {
		return err
	}
	out := c.App.Writer
	var rows []StepRow
	demux := &recordDemux{out: out, handle: func(rec record) error {
		switch rec.Kind {
		case "ranks":
			fmt.Fprintf(out, "#\n# Using ranks\n")
			for _, ri := range rec.Ranks {
				fmt.Fprintf(out, "#  Rank %2d Pid %6d on %10s\n", ri.Rank, ri.Pid, ri.Host)
			}
			writeStepHeader(out)
		case "step":
			if rec.Step == nil {
				return errors.New("bench: a step record without a row")
			}
			rows = append(rows, *rec.Step)
			fmt.Fprintln(out, formatStepRow(rec.Step))
		default:
			return fmt.Errorf("bench: unknown record kind %q from rank 0", rec.Kind)
		}
		return nil
	}}
	j.Stdout = demux
	fmt.Fprintf(out, "# %s\n", o.header)
	runErr := launchFunc(cfg)(c.Context, j)
	demuxErr := demux.Close()
	if runErr != nil {
		return runErr
	}
	if demuxErr != nil {
		return demuxErr
	}
	if len(rows) != 2 || rows[0].Mode != stepCalls || rows[1].Mode != stepGraph {
		return fmt.Errorf("bench: the job sent %d step rows, want calls then graph", len(rows))
	}
	calls, graph := rows[0], rows[1]
	fmt.Fprintf(out, "# calls/graph: %.2fx (mean), %.2fx (median); graph: %d collectives in, %d out, compiled in %s us\n",
		ratio(calls.TimeUS, graph.TimeUS), ratio(calls.MedianUS, graph.MedianUS), calls.Colls, graph.Colls,
		strings.TrimSpace(formatTime(graph.CompileUS)))
	rep := &report{out: out, o: o, steps: rows}
	return rep.finish()
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// The --graph table has 11 fields a row, the MPI twin's too: mode, the
// collectives a step makes, the step's bytes and elements, type, redop,
// the mean and median step, algbw and busbw (the step's bytes over its
// time; busbw with AllReduce's factor), #wrong.

func writeStepHeader(w io.Writer) {
	fmt.Fprintf(w, "#\n")
	fmt.Fprintf(w, "# %5s  %5s  %10s  %10s  %8s  %6s  %7s  %7s  %6s  %6s  %6s\n",
		"mode", "colls", "size", "count", "type", "redop", "time", "median", "algbw", "busbw", "#wrong")
	fmt.Fprintf(w, "# %5s  %5s  %10s  %10s  %8s  %6s  %7s  %7s  %6s  %6s  %6s\n",
		"", "", "(B)", "(elements)", "", "", "(us)", "(us)", "(GB/s)", "(GB/s)", "")
}

func formatStepRow(r *StepRow) string {
	return fmt.Sprintf("  %5s  %5d  %10d  %10d  %8s  %6s  %7s  %7s  %6.2f  %6.2f  %6s", r.Mode, r.Colls, r.Bytes, r.Count,
		r.Type, r.RedOp, formatTime(r.TimeUS), formatTime(r.MedianUS), r.AlgBW, r.BusBW, formatWrong(r.Wrong))
}

// stepMode is one way of making the step on a rank.
type stepMode struct {
	name  string
	colls int
	run   func(context.Context) error
}

// measureStep is a rank's part of --graph.
func measureStep[T hccl.Element](ctx context.Context, s *sweeper) error {
	n, rank := s.comm.Size(), s.comm.Rank()
	if err := s.exchangeRanks(ctx); err != nil {
		return err
	}
	conv := converter[T]()
	bufs := make([][]T, len(s.sp.Step))
	var total int64
	for k, b := range s.sp.Step {
		var err error
		if bufs[k], err = allocBuffer[T](int(b)/s.dt.Size, s.sp.Register); err != nil {
			return fmt.Errorf("bench rank %d: step buffer %d: %w", rank, k, err)
		}
		if s.sp.Register {
			defer hccl.MemFree(bufs[k])
		}
		fillWith(bufs[k], conv, func(int) int64 { return 1 }) // first touch outside the timing
		total += b
	}
	calls := stepMode{name: stepCalls, colls: len(bufs), run: func(ctx context.Context) error {
		for k, buf := range bufs {
			if err := hccl.AllReduce(ctx, s.comm, buf, buf, s.op.op); err != nil {
				return fmt.Errorf("call %d: %w", k, err)
			}
		}
		return nil
	}}
	g := hccl.NewGraph(s.comm)
	for _, buf := range bufs {
		if err := hccl.GraphAllReduce(g, buf, buf, s.op.op); err != nil {
			return fmt.Errorf("bench rank %d: record the step: %w", rank, err)
		}
	}
	if err := s.comm.Barrier(ctx); err != nil {
		return fmt.Errorf("bench rank %d: %w", rank, err)
	}
	start := time.Now()
	exe, err := g.Compile(ctx)
	if err != nil {
		return fmt.Errorf("bench rank %d: compile the step: %w", rank, err)
	}
	compile := []float64{time.Since(start).Seconds()}
	defer exe.Close()
	if err := hccl.AllReduce(ctx, s.comm, compile, compile, hccl.Max); err != nil {
		return fmt.Errorf("bench rank %d: gather the compile times: %w", rank, err)
	}
	modes := []stepMode{calls, {name: stepGraph, colls: exe.Steps(), run: exe.Run}}

	l := NewLayout(AllReduce, total, s.dt.Size, n)
	stamps := make([]time.Duration, s.sp.Iters)
	rounds := make([][]Result, len(modes))
	for round := range max(1, s.sp.Rounds) {
		for i := range modes {
			m := (i + round) % len(modes) // calls first in even rounds, graph in odd ones
			res, err := timeSteps(ctx, s, modes[m].run, l, stamps)
			if err != nil {
				return fmt.Errorf("bench rank %d: step, %s, round %d: %w", rank, modes[m].name, round+1, err)
			}
			rounds[m] = append(rounds[m], res)
		}
	}
	for m, mode := range modes {
		res := combineRounds(rounds[m], l)
		if s.sp.Check {
			if res.Wrong, err = checkStep(ctx, s, mode.run, bufs, conv); err != nil {
				return fmt.Errorf("bench rank %d: step, %s, check: %w", rank, mode.name, err)
			}
		}
		row := StepRow{Mode: mode.name, Ranks: n, Step: s.sp.StepSpec, Bytes: total, Count: total / int64(s.dt.Size),
			Type: s.dt.Name, RedOp: s.op.Name, Colls: mode.colls, Result: res}
		if mode.name == stepGraph {
			row.CompileUS = compile[0] * 1e6
		}
		if err := s.report(record{Kind: "step", Step: &row}); err != nil {
			return err
		}
	}
	return nil
}

// timeSteps runs -w untimed steps, meets the other ranks at a Barrier and
// times -n steps back to back: the mean and the median step, each the
// maximum over ranks, as measure does for one collective.
func timeSteps(ctx context.Context, s *sweeper, step func(context.Context) error, l Layout, stamps []time.Duration) (Result, error) {
	for range s.sp.Warmup {
		if err := step(ctx); err != nil {
			return Result{}, err
		}
	}
	return timed(ctx, s, step, l, stamps)
}

// checkStep fills every buffer of the step with the pattern, makes one
// step and returns the wrong elements summed over the ranks. Element i of
// call k is the pattern's element off(k)+i, off(k) being the elements of
// the calls before, so that a graph that swapped or shifted buffers in
// its fused staging is caught.
func checkStep[T hccl.Element](ctx context.Context, s *sweeper, step func(context.Context) error, bufs [][]T, conv func(int64) T) (int64, error) {
	p := newPattern(s.dt, s.comm.Size(), s.op.Name)
	rank, off := s.comm.Rank(), 0
	for _, buf := range bufs {
		o := off
		fillWith(buf, conv, func(i int) int64 { return p.value(rank, o+i) })
		off += len(buf)
	}
	if err := step(ctx); err != nil {
		return 0, err
	}
	wrong, off := []int64{0}, 0
	for _, buf := range bufs {
		o := off
		wrong[0] += countWrong(buf, conv, func(i int) int64 { return p.reduced(o + i) })
		off += len(buf)
	}
	if err := hccl.AllReduce(ctx, s.comm, wrong, wrong, hccl.Sum); err != nil {
		return 0, fmt.Errorf("sum the wrong counts: %w", err)
	}
	return wrong[0], nil
}

// allocBuffer is one buffer of n elements, as allocBuffers makes them.
func allocBuffer[T hccl.Element](n int, register bool) ([]T, error) {
	if !register {
		return make([]T, n), nil
	}
	return hccl.MemAlloc[T](n)
}

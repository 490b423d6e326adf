package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// --first N shows what the normal mode hides on purpose (warmUpJob): the
// cost of a fresh job's first calls. The parent runs every case, one
// collective at one size, as a job of its own, so that each meets a runtime
// just initialised: no link, ring or plan but those Init and one Barrier
// made. A rank calls Init, allocates and fills its buffers (out of place
// only), meets the others at one Barrier and times N calls back to back
// with no warm-up, as bench/mpi/mpibench.c does with -w 0 -n N; then it
// checks the result (-c 1) and only then exchanges the pids that rank 0
// reports, so that no other collective runs before the timed calls.
//
// Each rank stamps the end of every call on its own clock, started as it
// leaves the Barrier; the job takes the latest stamp of every call over the
// ranks (one AllReduce Max), and call k's time is the latest end of call k
// minus the latest end of call k-1. The first call's time is thus the
// slowest rank's first call, every time is positive, and the N add up to
// the slowest rank's total, so their mean is exactly mpibench's time (the
// maximum over ranks of each rank's mean). Taking each call's maximum
// duration instead would count a rank's wait for a late peer twice (once
// in the late call, once in the peer's) and make the mean larger than
// mpibench's.

// runFirst is the parent of --first: one job per case, collectives and
// sizes in order, each reporting one row.
func runFirst(c *cli.Context, cfg Config, o *options) error {
	out := c.App.Writer
	rep := &report{out: out, o: o}
	fmt.Fprintf(out, "# %s\n", o.header)
	for _, cl := range o.colls {
		fmt.Fprintf(out, "#\n# Collective: %s\n", cl)
		writeFirstHeader(out)
		for _, size := range o.Sizes {
			if err := c.Context.Err(); err != nil {
				return err
			}
			row, err := runFirstCase(c, cfg, o, cl, size)
			if err != nil {
				return err
			}
			rep.rows = append(rep.rows, *row)
			fmt.Fprintln(out, formatFirstRow(row))
			fmt.Fprintln(out, formatFirstCalls(row))
			fmt.Fprintln(out, formatFirstJob(row))
		}
	}
	return rep.finish()
}

// runFirstCase runs the fresh job of collective cl at size bytes and
// returns its row, with the job's ranks.
func runFirstCase(c *cli.Context, cfg Config, o *options, cl Coll, size int64) (*Row, error) {
	sp := o.spec
	sp.Colls, sp.Sizes = []string{cl.String()}, []int64{size}
	job, err := jobFor(c, sp, o.np)
	if err != nil {
		return nil, err
	}
	var row *Row
	var ranks []RankInfo
	demux := &recordDemux{out: c.App.Writer, handle: func(rec record) error {
		switch rec.Kind {
		case "ranks":
			ranks = rec.Ranks
		case "row":
			if rec.Row == nil || row != nil {
				return fmt.Errorf("bench: the job of %s at %d bytes sent a second or empty row", cl, size)
			}
			row = rec.Row
		default:
			return fmt.Errorf("bench: unknown record kind %q from rank 0", rec.Kind)
		}
		return nil
	}}
	job.Stdout = demux
	runErr := launchFunc(cfg)(c.Context, job)
	demuxErr := demux.Close()
	if runErr != nil {
		return nil, runErr
	}
	if demuxErr != nil {
		return nil, demuxErr
	}
	if row == nil {
		return nil, fmt.Errorf("bench: the job of %s at %d bytes ended without its row", cl, size)
	}
	row.Job = ranks
	return row, nil
}

// measureFirst is a rank's part of one --first case (the spec holds one
// collective and one size).
func measureFirst[T hccl.Element](ctx context.Context, s *sweeper) error {
	n, rank := s.comm.Size(), s.comm.Rank()
	l := NewLayout(s.colls[0], s.sp.Sizes[0], s.dt.Size, n)
	sendBuf, recvBuf, err := allocBuffers[T](max(l.SendCount, l.RecvCount), s.sp.Register)
	if err != nil {
		return fmt.Errorf("bench rank %d: %w", rank, err)
	}
	defer freeBuffers(sendBuf, recvBuf, s.sp.Register)
	// Touch every page before the timing, as mpibench's memset does.
	conv := converter[T]()
	fillWith(sendBuf, conv, func(int) int64 { return 1 })
	fillWith(recvBuf, conv, func(int) int64 { return 1 })
	bc := newCase(n, rank, l, false, s.dt, s.op, s.sp.Root, sendBuf, recvBuf)
	bc.fill()
	res, err := timeFirst(ctx, s, bc, l)
	if err != nil {
		return fmt.Errorf("bench rank %d: first %d calls of %v at %d bytes: %w", rank, s.sp.First, l.Coll, l.Bytes, err)
	}
	if err := s.exchangeRanks(ctx); err != nil {
		return err
	}
	row := s.newRow(l)
	row.OutOfPlace = res
	return s.report(record{Kind: "row", Row: &row})
}

// timeFirst meets the other ranks at the Barrier, times the first calls
// of bc and, with checking on, runs the checked call.
func timeFirst[T hccl.Element](ctx context.Context, s *sweeper, bc *benchCase[T], l Layout) (Result, error) {
	if err := s.comm.Barrier(ctx); err != nil {
		return Result{}, err
	}
	ends := make([]int64, s.sp.First) // nanoseconds since the Barrier
	start := time.Now()
	for i := range ends {
		if err := bc.run(ctx, s.comm); err != nil {
			return Result{}, fmt.Errorf("call %d: %w", i+1, err)
		}
		ends[i] = time.Since(start).Nanoseconds()
	}
	if err := hccl.AllReduce(ctx, s.comm, ends, ends, hccl.Max); err != nil {
		return Result{}, fmt.Errorf("gather the times: %w", err)
	}
	res := firstResult(ends, l)
	return withCheck(ctx, s, bc, res)
}

// firstResult turns the latest end of every call over the ranks
// (nanoseconds since the Barrier, increasing) into the calls' times and
// their summary; Wrong is -1 (not checked).
func firstResult(ends []int64, l Layout) Result {
	res := Result{CallsUS: make([]float64, len(ends)), Wrong: -1}
	var prev int64
	for i, e := range ends {
		res.CallsUS[i] = float64(e-prev) / 1e3
		prev = e
	}
	res.TimeUS = float64(prev) / 1e3 / float64(len(ends))
	res.MedianUS = median(slices.Clone(res.CallsUS))
	res.FirstUS, res.SlowestUS = res.CallsUS[0], slices.Max(res.CallsUS)
	res.AlgBW, res.BusBW = l.Bandwidth(res.TimeUS / 1e6)
	return res
}

package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// spec is what every rank of the job is told to run. The parent builds and
// validates it from the flags and passes it as JSON on the rank's command
// line, so that the ranks need not parse (or agree on) flags.
type spec struct {
	Colls      []string `json:"colls"`
	Sizes      []int64  `json:"sizes"`
	Iters      int      `json:"iters"`
	Warmup     int      `json:"warmup"`
	Check      bool     `json:"check"`
	Register   bool     `json:"register"` // -R 1: buffers from runtime.MemAlloc
	DType      string   `json:"dtype"`
	RedOp      string   `json:"redop"`
	Root       int      `json:"root"`
	CPUProfile string   `json:"cpuprofile,omitempty"` // directory for rank-N.pprof
	Algos      []string `json:"algos,omitempty"`      // --algos: compared within the job (algos.go)
	Rounds     int      `json:"rounds,omitempty"`     // --rounds, with Algos
	// First is --first: time this many calls of a fresh job, the spec
	// naming one collective and one size (first.go). Iters is First then,
	// and Warmup 0.
	First int `json:"first,omitempty"`
	// Step is --graph: the sizes in bytes of the step's AllReduces, which
	// the ranks time one by one and as a graph in Rounds rounds (step.go);
	// StepSpec is the --step value they came from.
	Step     []int64 `json:"step,omitempty"`
	StepSpec string  `json:"step_spec,omitempty"`
}

// hostNameBytes is the room for a host name in the rank exchange.
const hostNameBytes = 64

// runRank is one rank of the benchmark job: it joins the job, runs the
// sweep, and on rank 0 writes the records to out.
func runRank(ctx context.Context, sp spec, out io.Writer) (err error) {
	colls := make([]Coll, len(sp.Colls))
	for i, name := range sp.Colls {
		c, ok := collByName(name)
		if !ok {
			return fmt.Errorf("bench rank: unknown collective %q", name)
		}
		colls[i] = c
	}
	dt, err := ParseDType(sp.DType)
	if err != nil {
		return fmt.Errorf("bench rank: %w", err)
	}
	op, err := ParseRedOp(sp.RedOp)
	if err != nil {
		return fmt.Errorf("bench rank: %w", err)
	}
	if sp.Iters < 1 || sp.Warmup < 0 {
		return fmt.Errorf("bench rank: iters %d and warmup %d, want at least 1 and 0", sp.Iters, sp.Warmup)
	}
	if (len(sp.Algos) > 0 || len(sp.Step) > 0) && sp.Rounds < 1 {
		return fmt.Errorf("bench rank: %d rounds, want at least 1", sp.Rounds)
	}
	if sp.First < 0 || sp.First > 0 && (len(sp.Colls) != 1 || len(sp.Sizes) != 1 || len(sp.Algos) > 0) {
		return fmt.Errorf("bench rank: first %d calls of %d collectives at %d sizes, want one of each and no algos", sp.First, len(sp.Colls), len(sp.Sizes))
	}
	comm, err := hccl.Init(ctx)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if cerr := comm.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("bench rank %d: %w", comm.Rank(), cerr)
		}
	}()
	if sp.Root < 0 || sp.Root >= comm.Size() {
		return fmt.Errorf("bench rank %d: root %d is not a rank of %d", comm.Rank(), sp.Root, comm.Size())
	}
	if sp.CPUProfile != "" {
		stop, err := startProfile(sp.CPUProfile, comm.Rank())
		if err != nil {
			return err
		}
		defer stop()
	}
	s := &sweeper{comm: comm, sp: sp, colls: colls, dt: dt, op: op, out: out}
	switch dt.Name {
	case "int8":
		return sweep[int8](ctx, s)
	case "uint8":
		return sweep[uint8](ctx, s)
	case "int16":
		return sweep[int16](ctx, s)
	case "uint16":
		return sweep[uint16](ctx, s)
	case "int32":
		return sweep[int32](ctx, s)
	case "uint32":
		return sweep[uint32](ctx, s)
	case "int64":
		return sweep[int64](ctx, s)
	case "uint64":
		return sweep[uint64](ctx, s)
	case "half":
		return sweep[hccl.Float16](ctx, s)
	case "bfloat16":
		return sweep[hccl.BFloat16](ctx, s)
	case "float":
		return sweep[float32](ctx, s)
	case "double":
		return sweep[float64](ctx, s)
	}
	return fmt.Errorf("bench rank: no sweep for type %s", dt.Name)
}

// startProfile writes this rank's CPU profile to dir/rank-N.pprof until
// the returned function is called. Each rank creates dir if it is missing,
// as ranks on other hosts must.
func startProfile(dir string, rank int) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench rank %d: cpu profile: %w", rank, err)
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("rank-%d.pprof", rank)))
	if err != nil {
		return nil, fmt.Errorf("bench rank %d: cpu profile: %w", rank, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench rank %d: cpu profile: %w", rank, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// sweeper holds what every step of one rank's sweep needs.
type sweeper struct {
	comm  *hccl.Comm
	sp    spec
	colls []Coll
	dt    DType
	op    RedOp
	out   io.Writer // rank 0's record stream
	warm  bool      // the first case has been measured (see measure)
}

func (s *sweeper) report(rec record) error {
	if s.comm.Rank() != 0 {
		return nil
	}
	return writeRecord(s.out, rec)
}

// sweep runs every collective over every size with elements of type T.
// The two buffers are allocated once, for the largest layout of the sweep,
// and touched before anything is timed: first-touch page faults would
// otherwise land in the first timed sizes
// (docs/measurements.md#buffers-touched-before-timing).
func sweep[T hccl.Element](ctx context.Context, s *sweeper) error {
	if s.sp.First > 0 {
		return measureFirst[T](ctx, s)
	}
	if len(s.sp.Step) > 0 {
		return measureStep[T](ctx, s)
	}
	n, rank := s.comm.Size(), s.comm.Rank()
	if err := s.exchangeRanks(ctx); err != nil {
		return err
	}
	maxElems := 0
	for _, c := range s.colls {
		for _, size := range s.sp.Sizes {
			l := NewLayout(c, size, s.dt.Size, n)
			maxElems = max(maxElems, l.SendCount, l.RecvCount)
		}
	}
	conv := converter[T]()
	sendBuf, recvBuf, err := allocBuffers[T](maxElems, s.sp.Register)
	if err != nil {
		return fmt.Errorf("bench rank %d: %w", rank, err)
	}
	defer freeBuffers(sendBuf, recvBuf, s.sp.Register)
	fillWith(sendBuf, conv, func(int) int64 { return 1 })
	fillWith(recvBuf, conv, func(int) int64 { return 1 })
	stamps := make([]time.Duration, s.sp.Iters)

	for _, c := range s.colls {
		if err := s.report(record{Kind: "start", Coll: c.String()}); err != nil {
			return err
		}
		for _, size := range s.sp.Sizes {
			l := NewLayout(c, size, s.dt.Size, n)
			row := s.newRow(l)
			placements := []bool{false}
			if c.HasInPlace() {
				placements = append(placements, true)
			}
			// results[placement][algorithm]; one algorithm, the selector's,
			// without --algos.
			results := make([][]Result, len(placements))
			for i, inPlace := range placements {
				where := "out of place"
				if inPlace {
					where = "in place"
				}
				bc := newCase(n, rank, l, inPlace, s.dt, s.op, s.sp.Root, sendBuf, recvBuf)
				var err error
				if len(s.sp.Algos) > 0 {
					results[i], err = measureAlgos(ctx, s, c, bc, l, stamps)
				} else {
					var res Result
					res, err = measure(ctx, s, bc, l, stamps)
					results[i] = []Result{res}
				}
				if err != nil {
					return fmt.Errorf("bench rank %d: %v at %d bytes, %s: %w", rank, c, l.Bytes, where, err)
				}
			}
			for a := range results[0] {
				row := row
				if len(s.sp.Algos) > 0 {
					row.Algo = s.sp.Algos[a]
				}
				row.OutOfPlace = results[0][a]
				if len(results) > 1 {
					row.InPlace = &results[1][a]
				}
				if err := s.report(record{Kind: "row", Row: &row}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// newRow is the row of layout l, without its results.
func (s *sweeper) newRow(l Layout) Row {
	row := Row{Coll: l.Coll.String(), Ranks: l.Ranks, Bytes: l.Bytes, Count: l.Count, Type: s.dt.Name, RedOp: "none", Root: -1}
	if l.Coll.Reduces() {
		row.RedOp = s.op.Name
	}
	if l.Coll.Rooted() {
		row.Root = s.sp.Root
	}
	return row
}

// measure times one case as nccl-tests does: warm-up iterations, a
// barrier, then the timed iterations back to back with no synchronisation
// between them. Each rank takes its own mean and median; the job reports
// the maximum of each. With checking on, the case is refilled and run once
// more, and the wrong elements of every rank are summed.
func measure[T hccl.Element](ctx context.Context, s *sweeper, bc *benchCase[T], l Layout, stamps []time.Duration) (Result, error) {
	bc.fill()
	first := !s.warm
	s.warm = true
	for range s.sp.Warmup {
		if err := bc.run(ctx, s.comm); err != nil {
			return Result{}, err
		}
	}
	if first {
		if err := warmUpJob(ctx, s.comm, bc); err != nil {
			return Result{}, err
		}
	}
	res, err := timed(ctx, s, func(ctx context.Context) error { return bc.run(ctx, s.comm) }, l, stamps)
	if err != nil {
		return Result{}, err
	}
	return withCheck(ctx, s, bc, res)
}

// timed meets the other ranks at a Barrier, then makes len(stamps) runs
// back to back: the mean and the median run, each the maximum over ranks.
func timed(ctx context.Context, s *sweeper, run func(context.Context) error, l Layout, stamps []time.Duration) (Result, error) {
	if err := s.comm.Barrier(ctx); err != nil {
		return Result{}, err
	}
	// time.Since reads only the monotonic clock, half of what time.Now
	// costs (two vDSO calls): the stamps are overhead in every call.
	start := time.Now()
	var prev time.Duration
	for i := range stamps {
		if err := run(ctx); err != nil {
			return Result{}, err
		}
		now := time.Since(start)
		stamps[i] = now - prev
		prev = now
	}
	times := []float64{prev.Seconds() / float64(len(stamps)), median(stamps).Seconds()}
	if err := hccl.AllReduce(ctx, s.comm, times, times, hccl.Max); err != nil {
		return Result{}, fmt.Errorf("gather the times: %w", err)
	}
	res := Result{TimeUS: times[0] * 1e6, MedianUS: times[1] * 1e6, Wrong: -1}
	res.AlgBW, res.BusBW = l.Bandwidth(times[0])
	return res, nil
}

// withCheck returns res with Wrong set, when the spec asks for a check:
// bc's buffers refilled, the collective run once more and the wrong
// elements of its result summed over the ranks.
func withCheck[T hccl.Element](ctx context.Context, s *sweeper, bc *benchCase[T], res Result) (Result, error) {
	if !s.sp.Check {
		return res, nil
	}
	bc.fill()
	if err := bc.run(ctx, s.comm); err != nil {
		return Result{}, err
	}
	wrong := []int64{bc.check()}
	if err := hccl.AllReduce(ctx, s.comm, wrong, wrong, hccl.Sum); err != nil {
		return Result{}, fmt.Errorf("sum the wrong counts: %w", err)
	}
	res.Wrong = wrong[0]
	return res, nil
}

// warmUpJob runs the first case of a sweep until the job has settled: at
// least firstWarmup calls and firstWarmupTime on every rank, so that the
// steady figures are steady: a fresh job's first calls are what --first
// measures (first.go), and a first case can open links that Init did not
// (docs/performance.md, "Warm from the first call"). The ranks agree on when to stop (an AllReduce of their verdicts), since
// every rank must make the same calls.
func warmUpJob[T hccl.Element](ctx context.Context, comm *hccl.Comm, bc *benchCase[T]) error {
	start := time.Now()
	for round := 0; ; round++ {
		for range firstWarmup {
			if err := bc.run(ctx, comm); err != nil {
				return err
			}
		}
		settled := []int32{0}
		if time.Since(start) >= firstWarmupTime || round >= maxWarmupRounds {
			settled[0] = 1
		}
		if err := hccl.AllReduce(ctx, comm, settled, settled, hccl.Min); err != nil {
			return fmt.Errorf("agree on the warm-up: %w", err)
		}
		if settled[0] == 1 {
			return nil
		}
	}
}

// firstWarmup and firstWarmupTime bound the warm-up of a sweep's first case
// from below, maxWarmupRounds (of firstWarmup calls) from above.
const (
	firstWarmup     = 200
	firstWarmupTime = 200 * time.Millisecond
	maxWarmupRounds = 100
)

// median sorts d and returns its middle (the mean of the two middle ones
// for an even length).
func median[V time.Duration | float64](d []V) V {
	slices.Sort(d)
	m := len(d) / 2
	if len(d)%2 == 1 {
		return d[m]
	}
	return (d[m-1] + d[m]) / 2
}

// exchangeRanks gathers every rank's pid and host name on every rank, and
// rank 0 reports them (nccl-tests' "Using devices" lines).
func (s *sweeper) exchangeRanks(ctx context.Context) error {
	n := s.comm.Size()
	host, _ := os.Hostname()
	mine := make([]uint8, 8+hostNameBytes)
	pid := uint64(os.Getpid())
	for i := range 8 {
		mine[i] = uint8(pid >> (8 * i))
	}
	copy(mine[8:8+hostNameBytes-1], host)
	all := make([]uint8, n*len(mine))
	if err := hccl.AllGather(ctx, s.comm, mine, all); err != nil {
		return fmt.Errorf("bench rank %d: exchange pids: %w", s.comm.Rank(), err)
	}
	infos := make([]RankInfo, n)
	for r := range n {
		b := all[r*len(mine) : (r+1)*len(mine)]
		var p uint64
		for i := range 8 {
			p |= uint64(b[i]) << (8 * i)
		}
		name := b[8:]
		if i := slices.Index(name, 0); i >= 0 {
			name = name[:i]
		}
		infos[r] = RankInfo{Rank: r, Pid: int(p), Host: string(name)}
	}
	return s.report(record{Kind: "ranks", Ranks: infos})
}

// allocBuffers returns the sweep's send and receive buffers of n elements:
// with register, from hccl.MemAlloc, which a peer on the host copies large
// payloads out of with a plain copy (as nccl-tests' -R 1 registers its
// buffers); without, ordinary Go slices, which it reads with
// process_vm_readv.
func allocBuffers[T hccl.Element](n int, register bool) (send, recv []T, err error) {
	if !register {
		return make([]T, n), make([]T, n), nil
	}
	if send, err = hccl.MemAlloc[T](n); err != nil {
		return nil, nil, err
	}
	if recv, err = hccl.MemAlloc[T](n); err != nil {
		_ = hccl.MemFree(send)
		return nil, nil, err
	}
	return send, recv, nil
}

// freeBuffers frees what allocBuffers allocated.
func freeBuffers[T hccl.Element](send, recv []T, register bool) {
	if register {
		_ = hccl.MemFree(send)
		_ = hccl.MemFree(recv)
	}
}

// Command faultprog is the rank program of the fault suite (package
// test/fault). Started by hcclrun, it joins the job and does what -mode
// says, printing machine-readable lines the suite parses:
//
//	rank R start pid=P control=ADDR job=ID       before Init
//	rank R ready at=UNIXNANO                      after Init and a Barrier
//	rank R error at=UNIXNANO class=C: ERR         a call failed (then it exits)
//	rank R done ...                               the mode finished
//
// Modes:
//
//	loop        AllReduce (float32, -count elements, results checked) until
//	            rank 0 has run for -for (0: for ever)
//	graph       loop's twin in graph mode: a compiled graph of AllReduces
//	            (one of -count elements, small ones that fuse) and a
//	            Broadcast, replayed and checked
//	mismatch    -odd R calls another collective, count, dtype, op or root
//	            (-what) than the others
//	a2av-local  -bad R makes invalid AlltoAllV calls (each must fail at once
//	            with ErrInvalidArgument), then every rank runs a correct one
//	a2av-agree  -bad R sends one element more to rank R+1 than that rank
//	            expects; every rank then checks that nothing was written
//	            outside its receive ranges
//	soak        -calls seeded random collectives, every result checked,
//	            goroutines, fds and RSS sampled every -sample calls
//	no-close    -odd R exits 0 right after Init, without Close and before
//	            any link to it is open; the others run loop
//	no-init     -odd R exits 0 without calling Init; the others run loop
//
// The rank that exits early prints "rank R exit at=UNIXNANO" first.
//
// The exit code tells the class of the first error: 3 ErrMismatch, 4
// ErrAborted, 5 ErrTimeout, 6 ErrInvalidArgument, 7 Init failed, 8 a wrong
// result, 1 anything else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// Exit codes by error class.
const (
	exitOther    = 1
	exitMismatch = 3
	exitAborted  = 4
	exitTimeout  = 5
	exitInvalid  = 6
	exitInit     = 7
	exitWrong    = 8
)

type config struct {
	mode    string
	count   int
	dur     time.Duration
	odd     int
	what    string
	bad     int
	calls   int
	seed    uint64
	sample  int
	maxB    int
	corrupt int64
}

func main() {
	var cfg config
	flag.StringVar(&cfg.mode, "mode", "loop", "loop, graph, mismatch, a2av-local, a2av-agree, soak, no-close or no-init")
	flag.IntVar(&cfg.count, "count", 1<<16, "elements per AllReduce (loop, graph)")
	flag.DurationVar(&cfg.dur, "for", 0, "loop, graph: how long rank 0 keeps the loop going (0: for ever)")
	flag.IntVar(&cfg.odd, "odd", 1, "mismatch: the rank that calls differently; no-close, no-init: the rank that exits early")
	flag.StringVar(&cfg.what, "what", "collective", "mismatch: collective, count, dtype, op or root")
	flag.IntVar(&cfg.bad, "bad", 1, "a2av-*: the rank with bad counts")
	flag.IntVar(&cfg.calls, "calls", 1000, "soak: collectives to run")
	flag.Uint64Var(&cfg.seed, "seed", 1, "soak: seed of the random calls")
	flag.IntVar(&cfg.sample, "sample", 1000, "soak: calls between samples")
	flag.IntVar(&cfg.maxB, "max-bytes", 4<<20, "soak: largest buffer of a call")
	flag.Int64Var(&cfg.corrupt, "corrupt-from", -1, "soak: spoil the first result checked from this call on (a test of the checks)")
	flag.Parse()

	rank := os.Getenv("HCCL_RANK")
	fmt.Printf("rank %s start pid=%d control=%s job=%s\n", rank, os.Getpid(), os.Getenv("HCCL_CONTROL_ADDR"), os.Getenv("HCCL_JOB_ID"))
	if cfg.mode == "no-init" && rank == strconv.Itoa(cfg.odd) {
		exitEarly(rank)
	}
	ctx := context.Background()
	c, err := hccl.Init(ctx)
	if err != nil {
		fmt.Printf("rank %s error at=%d class=init: %v\n", rank, time.Now().UnixNano(), err)
		os.Exit(exitInit)
	}
	if cfg.mode == "no-close" && c.Rank() == cfg.odd {
		exitEarly(rank)
	}
	if err := c.Barrier(ctx); err != nil {
		fail(c, err)
	}
	fmt.Printf("rank %d ready at=%d\n", c.Rank(), time.Now().UnixNano())
	if cfg.mode == "a2av-agree" {
		// The first call of this mode fails on purpose, and the abort it
		// causes can reach a rank still on its way out of the Barrier
		// above, before it printed ready (seen in CI). A second Barrier
		// holds every rank until all have printed it.
		if err := c.Barrier(ctx); err != nil {
			fail(c, err)
		}
	}
	switch cfg.mode {
	case "loop", "no-close", "no-init":
		loop(ctx, c, cfg)
	case "graph":
		graphLoop(ctx, c, cfg)
	case "mismatch":
		mismatch(ctx, c, cfg)
	case "a2av-local":
		a2avLocal(ctx, c, cfg)
	case "a2av-agree":
		a2avAgree(ctx, c, cfg)
	case "soak":
		soak(ctx, c, cfg)
	default:
		fmt.Printf("rank %d error at=%d class=usage: unknown -mode %q\n", c.Rank(), time.Now().UnixNano(), cfg.mode)
		os.Exit(exitOther)
	}
	if err := c.Close(); err != nil {
		fail(c, err)
	}
}

// exitEarly ends the rank with code 0 as a program that forgot Close (or
// Init) would.
func exitEarly(rank string) {
	fmt.Printf("rank %s exit at=%d\n", rank, time.Now().UnixNano())
	os.Exit(0)
}

// class names err's kind and the exit code that goes with it.
func class(err error) (string, int) {
	switch {
	case errors.Is(err, hccl.ErrMismatch):
		return "mismatch", exitMismatch
	case errors.Is(err, hccl.ErrTimeout):
		return "timeout", exitTimeout
	case errors.Is(err, hccl.ErrInvalidArgument):
		return "invalid", exitInvalid
	case errors.Is(err, hccl.ErrAborted):
		return "aborted", exitAborted
	}
	return "other", exitOther
}

// fail prints err as the rank's error line and exits with its class's code.
func fail(c *hccl.Comm, err error) {
	name, code := class(err)
	fmt.Printf("rank %d error at=%d class=%s: %v\n", c.Rank(), time.Now().UnixNano(), name, err)
	os.Exit(code)
}

// wrong reports a wrong result and exits.
func wrong(c *hccl.Comm, format string, args ...any) {
	fmt.Printf("rank %d error at=%d class=wrong: %s\n", c.Rank(), time.Now().UnixNano(), fmt.Sprintf(format, args...))
	os.Exit(exitWrong)
}

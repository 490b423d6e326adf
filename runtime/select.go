package runtime

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// newSelector builds the communicator's algorithm selector: the cost model
// and the HCCL_ALGO policy (selectorModel), for a server of cores CPUs
// (hostCPUs) whose shared core changes hands in handoff (0: not
// measured). A malformed HCCL_ALGO fails Init rather than the first
// collective.
func newSelector(knobs Knobs, cores int, handoff time.Duration, log *slog.Logger) (*selector.Selector, error) {
	model, policy, err := selectorModel(knobs, cores, handoff)
	if err != nil {
		return nil, err
	}
	if handoff > 0 {
		log.Info("cost model", "handoff", handoff, "slow_host", handoff >= model.Slow.Handoff,
			"wake", model.Wake, "poll_max", model.PollMax)
	}
	return selector.New(model, policy, log), nil
}

// selectorModel is the cost model a job prices with, and its HCCL_ALGO
// policy: DefaultModel for a server of cores CPUs whose shared core
// changes hands in handoff (selector.Model.WithHandoff), or a tuning file
// over it, adjusted to what the knobs make the links do.
//
// The cores are the server's, not this process's: the launcher binds
// each rank to its own CPU, where runtime.NumCPU, DefaultModel's count,
// says 1, and two ranks on two cores were priced as two ranks sharing
// one (oversubscribed: every byte at half speed, a wake-up per round).
// On the 2-core machine of 2026-12-03 that changed five choices at np 2
// to 4 from what the model chose for the machine (AllReduce of 8 KiB at
// np 2 and 4, Broadcast of 256 KiB at np 3, of 32 and 256 KiB at np 4),
// and bench/calibrate, which prices in a process of its own, scored
// choices the jobs did not make.
func selectorModel(knobs Knobs, cores int, handoff time.Duration) (selector.Model, selector.Policy, error) {
	base := selector.DefaultModel().WithHandoff(handoff)
	if cores > 0 {
		base.Cores = cores
	}
	model, policy, err := selector.Load(base, knobs.Algo, knobs.TuningFile)
	if err != nil {
		return model, policy, err // the selector's errors name HCCL_ALGO or HCCL_TUNING_FILE
	}
	if knobs.ShmDisable {
		// Ranks of one server talk TCP: price them as the network class.
		model = model.WithoutShm()
	}
	// Price what the links will do: which collectives post in place.
	model.Posted = 0
	for coll := plan.AllReduce; coll <= plan.SendRecv; coll++ {
		if knobs.shmDirect().posts(coll) {
			model.Posted |= selector.PostedBit(coll)
		}
	}
	return model, policy, nil
}

// SelectorModel returns the cost model and algorithm policy that a job
// started with the environment getenv reads would choose with
// (HCCL_ALGO, HCCL_TUNING_FILE, HCCL_SHM_DISABLE, HCCL_SHM_DIRECT) on a
// host whose shared core changes hands in handoff (what the launcher
// measures there, shm.MeasureHandoff; 0 for not measured), for tools that
// price calls without running them (hcclrun plan).
func SelectorModel(getenv func(string) string, handoff time.Duration) (selector.Model, selector.Policy, error) {
	knobs, err := knobsFromEnv(getenv)
	if err != nil {
		return selector.Model{}, selector.Policy{}, err
	}
	return selectorModel(knobs, 0, handoff)
}

// chooseAlgorithm asks the selector for req's algorithm. The last answer
// is kept: a loop of AlltoAllV calls whose counts change from call to call
// (which the communicator's reuse of the last call leaves out, repeat.go)
// but whose size the selector sees alike skips the selector's locked,
// hashed cache.
func (c *Comm) chooseAlgorithm(req *plan.Request, elemSize int) (plan.Algorithm, error) {
	req.PerServer = c.perServer
	call := selector.CallFor(*req, elemSize)
	if c.warming {
		// Init's own call (warmup.go) leaves no choice behind, nor a log
		// line of a call the program did not make.
		choice, err := c.sel.Price(call)
		return choice.Algo, err
	}
	if c.lastChoice.algo != nil && c.lastChoice.call == call {
		return c.lastChoice.algo, nil
	}
	choice, err := c.sel.Choose(call)
	if err != nil {
		return nil, err
	}
	c.lastChoice.call, c.lastChoice.algo = call, choice.Algo
	return choice.Algo, nil
}

// SetAlgo forces algorithms for the collectives that follow as HCCL_ALGO
// does, in its grammar ("ring", "^ring", "allreduce:rhd;allgather:pat");
// "" lets the selector choose again. It replaces what HCCL_ALGO or
// WithAlgo forced. Every rank must make the same change between the same
// two collectives, as every rank must start with the same HCCL_ALGO:
// ranks that choose different algorithms for one call fail it with
// ErrMismatch or, for a rooted one, may wait until HCCL_EXEC_TIMEOUT.
// Benchmarks use it to alternate algorithms within one job (hcclrun bench
// --algos), so that the machine's changes of speed hit them alike. A
// malformed spec is an error and changes nothing.
func (c *Comm) SetAlgo(spec string) error {
	policy, err := selector.ParseAlgo(spec)
	if err != nil {
		return fmt.Errorf("rank %d: SetAlgo: %w", c.job.Rank, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sel = c.sel.WithPolicy(policy)
	c.lastChoice.algo = nil
	c.last.plan = nil
	return nil
}

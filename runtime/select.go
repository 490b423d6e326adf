package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/hcclrun/hcclrun/netio/control"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// newSelector builds the communicator's algorithm selector: the cost model
// and the HCCL_ALGO policy (selectorSettings), for a server of cores CPUs
// (hostCPUs) whose shared core changes hands in handoff (0: not
// measured). A malformed HCCL_ALGO fails Init rather than the first
// collective.
func newSelector(knobs tunables, cores int, handoff time.Duration, log *slog.Logger) (*selector.Selector, error) {
	model, policy, err := selectorSettings(knobs, cores, handoff).Model()
	if err != nil {
		return nil, err // the selector's errors name HCCL_ALGO or HCCL_TUNING_FILE
	}
	if handoff > 0 {
		log.Info("cost model", "handoff", handoff, "slow_host", handoff >= model.Slow.Handoff,
			"wake", model.Wake, "poll_max", model.PollMax)
	}
	return selector.New(model, policy, log), nil
}

// agreedSelector is the selector every rank of the job prices with alike:
// every algorithm choice must be a function of what all ranks agree on,
// or two schedules meet in one call. The policy, the tuning file, the
// links' settings and the hand-off (the rank table's) are the same
// everywhere; the cores are not (a server's bound CPUs, or the rank's own
// affinity when unbound, differ between servers and between ranks), so
// every rank takes rank 0's through the control plane: one put and one
// get (docs/selector.md#one-decision-per-call).
func agreedSelector(ctx context.Context, ctl *control.Client, job Job, knobs tunables, cores int, handoff time.Duration, log *slog.Logger) (*selector.Selector, error) {
	if job.Size > 1 {
		if job.Rank == 0 {
			if err := ctl.Put(ctx, coresKey, []byte(strconv.Itoa(cores))); err != nil {
				return nil, fmt.Errorf("publish the cores the selector prices with: %w", err)
			}
		} else {
			b, err := ctl.Get(ctx, coresKey)
			if err != nil {
				return nil, fmt.Errorf("read the cores rank 0 prices with: %w", err)
			}
			n, err := strconv.Atoi(string(b))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("rank 0 prices with %q cores", b)
			}
			if n != cores {
				log.Info("cost model", "cores", n, "own_cores", cores, "why", "rank 0's, so that every rank chooses alike")
			}
			cores = n
		}
	}
	return newSelector(knobs, cores, handoff, log)
}

// coresKey is where rank 0 publishes the cores the job's selectors price
// with.
const coresKey = "selector/cores"

// selectorSettings is what the knobs, options applied, decide about
// pricing: HCCL_ALGO, the tuning file, and what the links will do (TCP
// within a server, which collectives post in place). Tools read the same
// from the environment (selector.FromEnv; TestSelectorSettingsFromEnv
// holds the two together). The cores are the server's, not this
// process's: a rank bound to its own CPU would price its server as
// oversubscribed (docs/selector.md#where-the-inputs-come-from).
func selectorSettings(knobs tunables, cores int, handoff time.Duration) selector.Settings {
	s := selector.Settings{Algo: knobs.Algo, TuningFile: knobs.TuningFile, NoShm: knobs.ShmDisable, Cores: cores, Handoff: handoff,
		BuffSize: int64(knobs.BuffSize), MinChannels: knobs.MinChannels, MaxChannels: knobs.MaxChannels}
	for coll := plan.AllReduce; coll <= plan.SendRecv; coll++ {
		if knobs.shmDirect().posts(coll) {
			s.Posted |= selector.PostedBit(coll)
		}
	}
	return s
}

// scratchLimit bounds a plan's scratch, in elements of elemSize bytes, by
// the buffer of a link (HCCL_BUFFSIZE, or its default), as NCCL bounds
// PAT by its buffer: PAT cuts its blocks into pieces to stay within it.
// It is the knob's value, the same on every rank, not the ring a host
// fits in its /dev/shm, which may not be. The selector prices with the
// same bound (selector.Model.Scratch), so it does not choose PAT for a
// call PAT would then refuse.
func scratchLimit(knobs tunables, elemSize int) int {
	b := knobs.BuffSize
	if b <= 0 {
		b = selector.DefaultBuffSize
	}
	return b / max(elemSize, 1)
}

// choiceMade is a call the selector priced and its answer.
type choiceMade struct {
	call   selector.Call
	choice selector.Choice
}

// chooseAlgorithm asks the selector for req's algorithm, channels and
// segment. The last answer is kept: a loop of AlltoAllV calls whose
// counts change from call to call (which the communicator's reuse of the
// last call leaves out, repeat.go) but whose size the selector sees alike
// skips the selector's locked, hashed cache.
func (c *Comm) chooseAlgorithm(req *plan.Request, elemSize int) (selector.Choice, error) {
	req.Layout = c.layout
	req.ScratchLimit = scratchLimit(c.knobs, elemSize)
	call := selector.CallFor(*req, elemSize)
	if c.warming {
		// Init's own call (warmup.go) leaves no choice behind, nor a log
		// line of a call the program did not make.
		return c.sel.Price(call)
	}
	if c.lastChoice.choice.Algo != nil && c.lastChoice.call == call {
		return c.lastChoice.choice, nil
	}
	choice, err := c.sel.Choose(call)
	if err != nil {
		return selector.Choice{}, err
	}
	c.lastChoice.call, c.lastChoice.choice = call, choice
	return choice, nil
}

// SetAlgo forces algorithms for the collectives that follow as HCCL_ALGO
// does, in either of its grammars: ours ("ring", "^ring",
// "allreduce:rhd;allgather:pat") or HCCL's ("level0:NA;level1:H-D_R",
// "allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R");
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
	c.lastChoice.choice.Algo = nil
	c.last.plan = nil
	c.policyGen++
	return nil
}

// SetChannels bounds the channel count of the collectives that follow,
// of those the runtime splits over channels (AllReduce, Broadcast,
// Reduce), as HCCL_MIN_NCHANNELS and HCCL_MAX_NCHANNELS do: at least lo
// and at most hi, 0 leaving a bound to the selector; SetChannels(n, n)
// runs n, SetChannels(0, 0) lets the selector choose again. Every rank
// must make the same change between the same two collectives, as with
// SetAlgo. Benchmarks use it to alternate channel counts within one job.
// Bounds out of 0 to 16, or lo above hi, are an error and change nothing.
func (c *Comm) SetChannels(lo, hi int) error {
	if err := checkChannelBounds(lo, hi); err != nil {
		return fmt.Errorf("rank %d: SetChannels: %w", c.job.Rank, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sel = c.sel.WithChannels(lo, hi)
	c.lastChoice.choice.Algo = nil
	c.last.plan = nil
	c.policyGen++
	return nil
}

// checkChannelBounds refuses channel bounds that no call can meet.
func checkChannelBounds(lo, hi int) error {
	if lo < 0 || hi < 0 || lo > selector.MaxChannelCount || hi > selector.MaxChannelCount {
		return fmt.Errorf("channel bounds %d, %d: want counts from 1 to %d, or 0 for none", lo, hi, selector.MaxChannelCount)
	}
	if lo > 0 && hi > 0 && lo > hi {
		return fmt.Errorf("the least channel count %d exceeds the most, %d", lo, hi)
	}
	return nil
}

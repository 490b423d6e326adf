package selector

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Settings are what a job's configuration decides about pricing, beyond
// the constants: the policy, a tuning file, what the links do and the
// host. The runtime fills them from its knobs after its options; FromEnv
// reads them from an environment as a job started with it would.
type Settings struct {
	Algo       string // HCCL_ALGO (Policy's grammar); "" constrains nothing
	TuningFile string // HCCL_TUNING_FILE (ParseTuning); "" for none
	// NoShm prices the ranks of a server as the net class: they talk
	// TCP (HCCL_SHM_DISABLE=1).
	NoShm bool
	// Posted is the collectives whose large transfers from the send
	// buffer go in place (PostedBit; HCCL_SHM_DIRECT): DefaultPosted when
	// it is unset, 0 for none.
	Posted uint32
	// Cores is how many CPUs the ranks of a server share, 0 for this
	// process's (DefaultModel). A job takes its server's, not its own: a
	// rank bound to one CPU sees 1 (docs/selector.md#where-the-inputs-come-from).
	Cores int
	// Handoff is how long the host's shared core takes to change hands,
	// as the launcher measured it (internal/handoff, in the rank
	// table); 0 for not measured (Model.WithHandoff).
	Handoff time.Duration
	// BuffSize is HCCL_BUFFSIZE in bytes (ParseBuffSize), 0 for the
	// default, DefaultBuffSize: the bound of an algorithm's scratch
	// (Model.Scratch).
	BuffSize int64
	// MinChannels and MaxChannels bound the channel count of the calls
	// the runtime splits (HCCL_MIN_NCHANNELS, HCCL_MAX_NCHANNELS:
	// ChannelBounds), 0 where unset (Model.ChannelFloor, ChannelCeil).
	MinChannels, MaxChannels int
}

// Model returns the cost model and the HCCL_ALGO policy the settings
// price with: DefaultModel for the host (Cores, Handoff), the tuning
// file over it, then what the links do (NoShm, Posted), which no tuning
// file overrides. Errors name HCCL_ALGO or HCCL_TUNING_FILE.
func (s Settings) Model() (Model, Policy, error) {
	p, err := ParseAlgo(s.Algo)
	if err != nil {
		return Model{}, Policy{}, err
	}
	m := DefaultModel().WithHandoff(s.Handoff)
	if s.Cores > 0 {
		m.Cores = s.Cores
	}
	if s.TuningFile != "" {
		f, err := os.Open(s.TuningFile)
		if err != nil {
			return Model{}, Policy{}, fmt.Errorf("HCCL_TUNING_FILE: %w", err)
		}
		defer f.Close()
		if m, err = ParseTuning(f, m); err != nil {
			return Model{}, Policy{}, fmt.Errorf("HCCL_TUNING_FILE %s: %w", s.TuningFile, err)
		}
	}
	if s.NoShm {
		m = m.WithoutShm()
	}
	m.Posted = s.Posted
	m.Scratch = s.BuffSize
	if m.Scratch <= 0 {
		m.Scratch = DefaultBuffSize
	}
	m.ChannelFloor, m.ChannelCeil = s.MinChannels, s.MaxChannels
	return m, p, nil
}

// ChannelBounds reads HCCL_MIN_NCHANNELS and HCCL_MAX_NCHANNELS, or
// NCCL's spellings NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS where ours
// are unset: the least and the most channels a call the runtime splits
// runs on (Channelled), 0 where unset. Each is a count from 1 to
// MaxChannelCount, and the least may not exceed the most.
func ChannelBounds(getenv func(string) string) (lo, hi int, err error) {
	read := func(which string) (int, error) {
		name := "HCCL_" + which
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			name = "NCCL_" + which
			v = strings.TrimSpace(getenv(name))
		}
		if v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxChannelCount {
			return 0, fmt.Errorf("%s=%q: want a channel count from 1 to %d", name, v, MaxChannelCount)
		}
		return n, nil
	}
	if lo, err = read("MIN_NCHANNELS"); err != nil {
		return 0, 0, err
	}
	if hi, err = read("MAX_NCHANNELS"); err != nil {
		return 0, 0, err
	}
	if lo > 0 && hi > 0 && lo > hi {
		return 0, 0, fmt.Errorf("the least channel count (%d, HCCL_MIN_NCHANNELS) exceeds the most (%d, HCCL_MAX_NCHANNELS)", lo, hi)
	}
	return lo, hi, nil
}

// FromEnv returns the cost model and the algorithm policy that a job
// started with the environment getenv reads would choose with
// (HCCL_ALGO, HCCL_TUNING_FILE, HCCL_SHM_DISABLE, HCCL_SHM_DIRECT,
// HCCL_SHM_DIRECT_DISABLE, HCCL_BUFFSIZE, HCCL_MIN_NCHANNELS, HCCL_MAX_NCHANNELS), on a host whose shared core changes hands in
// handoff (0 for not measured), with this process's CPUs: for tools that
// price calls without running them (hcclrun plan, bench/calibrate). The
// variables mean what they mean to the runtime, which reads them itself.
func FromEnv(getenv func(string) string, handoff time.Duration) (Model, Policy, error) {
	s, err := settingsFromEnv(getenv)
	if err != nil {
		return Model{}, Policy{}, err
	}
	s.Handoff = handoff
	return s.Model()
}

// settingsFromEnv reads the variables FromEnv prices with.
func settingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{
		Algo:       strings.TrimSpace(getenv("HCCL_ALGO")),
		TuningFile: strings.TrimSpace(getenv("HCCL_TUNING_FILE")),
		Posted:     DefaultPosted,
	}
	flag := func(name string) (set, on bool, err error) {
		switch v := getenv(name); v {
		case "":
			return false, false, nil
		case "0", "1":
			return true, v == "1", nil
		default:
			return false, false, fmt.Errorf("%s=%q: want 0 or 1", name, v)
		}
	}
	var err error
	if s.MinChannels, s.MaxChannels, err = ChannelBounds(getenv); err != nil {
		return Settings{}, err
	}
	if v := getenv("HCCL_BUFFSIZE"); v != "" {
		if s.BuffSize, err = ParseBuffSize(v); err != nil {
			return Settings{}, err
		}
	}
	if _, s.NoShm, err = flag("HCCL_SHM_DISABLE"); err != nil {
		return Settings{}, err
	}
	_, noDirect, err := flag("HCCL_SHM_DIRECT_DISABLE")
	if err != nil {
		return Settings{}, err
	}
	set, all, err := flag("HCCL_SHM_DIRECT")
	if err != nil {
		return Settings{}, err
	}
	switch {
	case noDirect || (set && !all):
		s.Posted = 0
	case all:
		for c := plan.AllReduce; c <= plan.SendRecv; c++ {
			s.Posted |= PostedBit(c)
		}
	}
	return s, nil
}

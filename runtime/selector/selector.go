package selector

import (
	"log/slog"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Choice is the selector's decision for one call.
type Choice struct {
	Algo      plan.Algorithm
	Channels  int
	Segment   int64 // bytes
	Predicted time.Duration
}

// maxCached bounds the decision cache; a job that calls with ever new sizes
// starts over rather than growing without bound.
const maxCached = 4096

// Selector chooses algorithms for a communicator and caches its decisions.
// It is safe for concurrent use.
type Selector struct {
	model  Model
	policy Policy
	log    *slog.Logger

	mu    sync.Mutex
	cache map[Call]Choice
}

// New returns a selector with model m and policy p. Each distinct decision
// is logged at Info with its predicted cost (HCCL_DEBUG=INFO shows them);
// log may be nil.
func New(m Model, p Policy, log *slog.Logger) *Selector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Selector{model: m, policy: p, log: log, cache: map[Call]Choice{}}
}

// WithPolicy returns a selector that prices with s's model under policy
// p, with a cache of its own.
func (s *Selector) WithPolicy(p Policy) *Selector {
	return &Selector{model: s.model, policy: p, log: s.log, cache: map[Call]Choice{}}
}

// Fork returns a selector that prices with s's model and policy, with a
// cache of its own, logging to log: a sub-communicator's.
func (s *Selector) Fork(log *slog.Logger) *Selector {
	return &Selector{model: s.model, policy: s.policy, log: log, cache: map[Call]Choice{}}
}

// WithChannels returns a selector that prices with s's model and policy
// but bounds the channel counts by lo and hi (Model.ChannelFloor,
// ChannelCeil; 0 leaves a bound open), with a cache of its own.
func (s *Selector) WithChannels(lo, hi int) *Selector {
	m := s.model
	m.ChannelFloor, m.ChannelCeil = lo, hi
	return &Selector{model: m, policy: s.policy, log: s.log, cache: map[Call]Choice{}}
}

// WithSegmentLimit returns a selector that prices as s does but never
// chooses segments above n bytes, the most the executor cuts (a quarter
// of its shm ring), so that what it logs is what runs; it shares s's
// cache until n lowers a segment, and then has its own.
func (s *Selector) WithSegmentLimit(n int64) *Selector {
	m := s.model
	if n <= 0 || n >= m.MaxSegment {
		return s
	}
	m.MaxSegment = n
	m.MinSegment = min(m.MinSegment, n)
	return &Selector{model: m, policy: s.policy, log: s.log, cache: map[Call]Choice{}}
}

// Price returns what Choose would, without keeping or logging it: for a
// caller that wants the model run, not a choice (the runtime's warm-up).
func (s *Selector) Price(call Call) (Choice, error) {
	e, err := Predict(s.model, s.policy, call).Chosen()
	if err != nil {
		return Choice{}, err
	}
	a, _ := algo.Lookup(e.Algo)
	return Choice{Algo: a, Channels: e.Channels, Segment: e.Segment, Predicted: e.Time}, nil
}

// Choose returns the algorithm, channels and segment size for call. A call
// that HCCL_ALGO forces onto algorithms unable to serve it is an error that
// says why, wrapping ErrNoAlgorithm; there is no silent fallback.
func (s *Selector) Choose(call Call) (Choice, error) {
	s.mu.Lock()
	c, ok := s.cache[call]
	s.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := s.Price(call)
	if err != nil {
		return Choice{}, err
	}
	s.mu.Lock()
	if len(s.cache) >= maxCached {
		clear(s.cache)
	}
	s.cache[call] = c
	s.mu.Unlock()
	s.log.Info("algorithm chosen", "coll", call.Coll.String(), "bytes", call.Bytes,
		"ranks", call.Topo.Ranks, "servers", call.Topo.servers(), "algo", c.Algo.Name(),
		"channels", c.Channels, "segment", c.Segment, "predicted", c.Predicted)
	return c, nil
}

// CopyTime is what the model prices a local copy of n bytes at: a
// compiled graph weighs its staging copies with it (runtime/graph_fuse.go).
func (s *Selector) CopyTime(n int) time.Duration {
	return time.Duration(s.model.Copy * float64(n) * float64(time.Second))
}

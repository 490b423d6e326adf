package runtime

import (
	"log/slog"
	"time"
)

// Option changes how Init joins the job. The With functions make them;
// the zero Option changes nothing.
type Option struct {
	apply func(*settings)
}

// settings is what Init's options add to the environment.
type settings struct {
	job    *Job // nil: from the environment
	edits  []func(*tunables)
	logger *slog.Logger
}

// edit is an Option that changes one of the knobs the environment set.
func edit(f func(*tunables)) Option {
	return Option{func(s *settings) { s.edits = append(s.edits, f) }}
}

// WithJob joins the job j describes instead of reading the rank's identity
// from the environment. Tests use it to run many ranks in one process.
func WithJob(j Job) Option { return Option{func(s *settings) { s.job = &j }} }

// WithLogger sends the runtime's log records to l (default: WARN and above
// to standard error, or the level HCCL_DEBUG asks for).
func WithLogger(l *slog.Logger) Option { return Option{func(s *settings) { s.logger = l }} }

// WithAlgo forces algorithms as HCCL_ALGO does, overriding it.
func WithAlgo(spec string) Option { return edit(func(k *tunables) { k.Algo = spec }) }

// WithBufferSize sets the staging bytes per link, overriding HCCL_BUFFSIZE
// (whose bare number is MB: n here is always bytes).
func WithBufferSize(n int) Option { return edit(func(k *tunables) { k.BuffSize = n }) }

// WithChannels bounds the channel counts of the calls split over
// channels, overriding HCCL_MIN_NCHANNELS and HCCL_MAX_NCHANNELS: at
// least lo and at most hi, 0 leaving a bound open; WithChannels(n, n)
// runs n (Comm.SetChannels).
func WithChannels(lo, hi int) Option {
	return edit(func(k *tunables) { k.MinChannels, k.MaxChannels = lo, hi })
}

// WithShmDisabled forces TCP between ranks of one server, as
// HCCL_SHM_DISABLE=1 does.
func WithShmDisabled(disabled bool) Option {
	return edit(func(k *tunables) { k.ShmDisable = disabled })
}

// WithExecTimeout bounds every collective, overriding HCCL_EXEC_TIMEOUT.
func WithExecTimeout(d time.Duration) Option { return edit(func(k *tunables) { k.ExecTimeout = d }) }

// WithConnectTimeout bounds Init, overriding HCCL_CONNECT_TIMEOUT; 0 leaves
// it unbounded but for ctx.
func WithConnectTimeout(d time.Duration) Option {
	return edit(func(k *tunables) { k.ConnectTimeout = d })
}

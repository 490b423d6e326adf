package runtime

import (
	"log/slog"
	"time"
)

// Option changes how Init joins the job.
type Option func(*settings)

type settings struct {
	job    *Job // nil: from the environment
	knobs  tunables
	edits  []func(*tunables)
	logger *slog.Logger
}

// WithJob joins the job j describes instead of reading the rank's identity
// from the environment. Tests use it to run many ranks in one process.
func WithJob(j Job) Option { return func(s *settings) { s.job = &j } }

// WithLogger sends the runtime's log records to l (default: WARN and above
// to standard error, or the level HCCL_DEBUG asks for).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithAlgo forces algorithms as HCCL_ALGO does, overriding it.
func WithAlgo(spec string) Option {
	return func(s *settings) { s.edits = append(s.edits, func(k *tunables) { k.Algo = spec }) }
}

// WithBufferSize sets the staging bytes per link, overriding HCCL_BUFFSIZE.
func WithBufferSize(n int) Option {
	return func(s *settings) { s.edits = append(s.edits, func(k *tunables) { k.BuffSize = n }) }
}

// WithShmDisabled forces TCP between ranks of one server, as
// HCCL_SHM_DISABLE=1 does.
func WithShmDisabled(disabled bool) Option {
	return func(s *settings) { s.edits = append(s.edits, func(k *tunables) { k.ShmDisable = disabled }) }
}

// WithExecTimeout bounds every collective, overriding HCCL_EXEC_TIMEOUT.
func WithExecTimeout(d time.Duration) Option {
	return func(s *settings) { s.edits = append(s.edits, func(k *tunables) { k.ExecTimeout = d }) }
}

// WithConnectTimeout bounds Init, overriding HCCL_CONNECT_TIMEOUT.
func WithConnectTimeout(d time.Duration) Option {
	return func(s *settings) { s.edits = append(s.edits, func(k *tunables) { k.ConnectTimeout = d }) }
}

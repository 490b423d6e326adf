package launcher

import (
	"context"
	"log/slog"
)

// demoted returns a logger that writes h's records four levels lower (WARN
// as INFO, INFO as DEBUG). The control plane logs an abort as a warning,
// which it is for the server; for the launcher, which asked for the abort and
// prints one summary of it, it is detail for --verbose.
func demoted(l *slog.Logger) *slog.Logger { return slog.New(demotedHandler{l.Handler()}) }

type demotedHandler struct{ h slog.Handler }

func (d demotedHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return d.h.Enabled(ctx, level-4)
}

func (d demotedHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level -= 4
	return d.h.Handle(ctx, r)
}

func (d demotedHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demotedHandler{d.h.WithAttrs(attrs)}
}

func (d demotedHandler) WithGroup(name string) slog.Handler {
	return demotedHandler{d.h.WithGroup(name)}
}

package launcher

import (
	"context"
	"log/slog"
	"net"

	"github.com/hcclrun/hcclrun/netio"
)

// controlPlane is what the supervisor needs from the control-plane server:
// its address for the ranks, the abort broadcast, and the news of ranks
// whose connection dropped.
type controlPlane interface {
	Addr() string
	// Abort tells every connected rank that the job is aborted because of
	// origin (-1: no rank, e.g. a timeout or a signal).
	Abort(origin int, reason string)
	Events() <-chan controlEvent
	Close() error
}

type controlEventKind int

const (
	eventLost    controlEventKind = iota // connection dropped without a goodbye
	eventAborted                         // the rank itself aborted the job
)

type controlEvent struct {
	kind   controlEventKind
	rank   int
	reason string
}

type controlConfig struct {
	listen string
	jobID  string
	key    netio.Key
	size   int
	log    *slog.Logger
}

// startControl starts the control plane of a job.
//
// TODO(control): netio/control is being written; until it lands this is a
// listener that accepts nothing, so that HCCL_CONTROL_ADDR is a real address.
func startControl(ctx context.Context, cfg controlConfig) (controlPlane, error) {
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return nil, err
	}
	return &pendingControl{ln: ln, events: make(chan controlEvent)}, nil
}

type pendingControl struct {
	ln     net.Listener
	events chan controlEvent
}

func (c *pendingControl) Addr() string                { return c.ln.Addr().String() }
func (c *pendingControl) Abort(int, string)           {}
func (c *pendingControl) Events() <-chan controlEvent { return c.events }
func (c *pendingControl) Close() error                { return c.ln.Close() }

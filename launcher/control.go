package launcher

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio/control"
)

// controlPlane is what the supervisor needs from the control-plane server:
// its address for the ranks, the abort broadcast, the news of ranks that
// joined, left in order, dropped their connection or aborted the job, and
// the server's own view of every rank when the news may lag.
type controlPlane interface {
	Addr() string
	// Abort tells every connected rank (and every rank that connects
	// later) that the job is aborted because of origin (-1: the launcher,
	// e.g. a timeout or a signal).
	Abort(origin int, reason string)
	Events() <-chan controlEvent
	// States is what the server knows of every rank's connection now, by
	// rank. It costs O(ranks): the supervisor asks only to settle an exit
	// that the events have not explained yet.
	States() []control.RankState
	// Status is the server's full view of every rank (jobstatus.go),
	// Heartbeat the job's heartbeat interval.
	Status() []control.RankStatus
	Heartbeat() time.Duration
	// Value is what a rank put at key, if anything (Job.Collect).
	Value(key string) ([]byte, bool)
	Close() error
}

type controlEventKind int

const (
	eventLost    controlEventKind = iota // connection dropped or silent, no goodbye
	eventAborted                         // the rank itself aborted the job
	eventJoined                          // the rank connected and was admitted (Init)
	eventLeft                            // the rank closed its connection in order (Close)
)

type controlEvent struct {
	kind   controlEventKind
	rank   int
	reason string
	seq    int // order of arrival, set by the supervisor when it flags the rank
}

type controlConfig struct {
	listen    string
	jobID     string
	key       wire.Key
	size      int
	lostAfter time.Duration // HCCL_HEARTBEAT_TIMEOUT; 0: the control plane's default
	log       *slog.Logger
}

// startControl starts the job's control-plane server (netio/control) on
// cfg.listen and serves it until Close. The server does not abort on its
// own when a rank is lost: the launcher decides, because it also sees the
// rank's process and can tell a crash (exit status) from a hang. A rank
// silent for cfg.lostAfter reaches the supervisor as eventLost, like a
// dropped connection.
func startControl(_ context.Context, cfg controlConfig) (controlPlane, error) {
	srv, err := control.NewServer(control.ServerConfig{
		Addr:      cfg.listen,
		Key:       cfg.key,
		Size:      cfg.size,
		LostAfter: cfg.lostAfter,
		Log:       demoted(cfg.log).With("job", cfg.jobID),
	})
	if err != nil {
		return nil, err
	}
	c := &serverControl{srv: srv, log: cfg.log, events: make(chan controlEvent, cfg.size+16)}
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		// Serve's own context is not Run's: a cancelled Run still tears
		// down through the control plane, and Close ends Serve.
		if err := srv.Serve(context.Background()); err != nil {
			cfg.log.Warn("control plane stopped", "err", err)
		}
	}()
	go c.pump()
	return c, nil
}

// serverControl adapts *control.Server to controlPlane.
type serverControl struct {
	srv    *control.Server
	log    *slog.Logger
	events chan controlEvent
	wg     sync.WaitGroup
}

func (c *serverControl) Addr() string                    { return c.srv.Addr() }
func (c *serverControl) Abort(origin int, reason string) { c.srv.Abort(origin, reason) }
func (c *serverControl) Events() <-chan controlEvent     { return c.events }

func (c *serverControl) Status() []control.RankStatus    { return c.srv.Status() }
func (c *serverControl) Heartbeat() time.Duration        { return c.srv.Heartbeat() }
func (c *serverControl) Value(key string) ([]byte, bool) { return c.srv.Value(key) }

func (c *serverControl) States() []control.RankState {
	st := c.srv.Status()
	out := make([]control.RankState, len(st))
	for i, r := range st {
		out[i] = r.State
	}
	return out
}

// pump translates the server's events into the supervisor's, until the
// server closes its channel.
func (c *serverControl) pump() {
	defer c.wg.Done()
	defer close(c.events)
	for ev := range c.srv.Events() {
		c.log.Debug("control", "event", ev.String())
		switch e := ev.(type) {
		case control.RankLost:
			c.events <- controlEvent{kind: eventLost, rank: e.Rank, reason: e.Err.Error()}
		case control.RankAborted:
			c.events <- controlEvent{kind: eventAborted, rank: e.Rank, reason: e.Reason}
		case control.RankJoined:
			c.events <- controlEvent{kind: eventJoined, rank: e.Rank}
		case control.RankLeft:
			c.events <- controlEvent{kind: eventLeft, rank: e.Rank}
		}
	}
}

// Close stops the server (every rank still connected sees its connection
// close) and waits for the serving goroutines.
func (c *serverControl) Close() error {
	err := c.srv.Close()
	// The supervisor no longer reads events: drain so pump can finish.
	go func() {
		for range c.events {
		}
	}()
	c.wg.Wait()
	return err
}

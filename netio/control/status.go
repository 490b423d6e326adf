package control

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hcclrun/hcclrun/internal/cpu"
	"github.com/hcclrun/hcclrun/internal/wire"
)

// RankState is what the server knows of a rank's connection.
type RankState uint8

const (
	NotJoined RankState = iota // never admitted
	Alive                      // connected
	Left                       // closed its client in order
	Lost                       // connection broke or fell silent for LostAfter (or the server closed it)
)

func (s RankState) String() string {
	switch s {
	case NotJoined:
		return "not joined"
	case Alive:
		return "alive"
	case Left:
		return "left"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("RankState(%d)", uint8(s))
}

// RankStatus is the server's view of one rank: its connection, the
// progress it last reported (Client.SetProgress), and how long the server
// has not heard from it.
//
// Seq and InCall are as fresh as the rank's last message: at most one
// heartbeat old for a live rank, exact for the rank that asks (its Status
// request carries its own progress). SilentFor is the time since the
// server last read any message from the rank; for a rank that never
// joined, the time since the server started.
type RankStatus struct {
	Rank      int
	State     RankState
	Seq       uint64
	InCall    bool
	SilentFor time.Duration // on the wire in whole milliseconds, capped at about 49 days
	// Where is the rank's place inside call Seq as its last heartbeat
	// told it (Client.Where): the step and the peer it waits on. Only
	// Server.Status fills it; a StatusReply does not carry it.
	Where wire.Where
}

// progress packs a collective number and an in-call bit into one word,
// so that SetProgress is one atomic store and a reader never sees the
// two halves of different calls.
type progress struct{ v atomic.Uint64 }

func (p *progress) store(seq uint64, inCall bool) {
	v := seq << 1
	if inCall {
		v |= 1
	}
	cpu.ReleaseStore64(&p.v, v) // two per collective: sync/atomic's store stalls the pipeline
}

func (p *progress) load() (seq uint64, inCall bool) {
	v := p.v.Load()
	return v >> 1, v&1 != 0
}

// SetProgress records that this rank entered (inCall true) or left
// (inCall false) collective number seq. It is one atomic store, safe to
// call from any goroutine at any rate, and never blocks or allocates: the
// value travels with the next heartbeat and with every Status request.
// seq must be below 1<<63 (the top bit is dropped). Collectives are
// numbered from 1; 0 with inCall false, the initial value, means none yet.
func (c *Client) SetProgress(seq uint64, inCall bool) { c.progress.store(seq, inCall) }

// Where returns the word the rank's executors store its place inside the
// running call into (a wire.Where: step and peer waited on), which the
// heartbeats carry to the server for hcclrun status. A plain store to it
// is enough: the heartbeat reads it atomically, and a stale value only
// makes the status a heartbeat old.
func (c *Client) Where() *atomic.Uint64 { return &c.where }

// Status asks the server for every rank's status, in rank order, in one
// round trip; the request carries this rank's progress, so its own entry
// is current. It fails once the client is done (Err), and on a job of
// more than MaxStatusRanks ranks; use Server.Status there.
func (c *Client) Status(ctx context.Context) ([]RankStatus, error) {
	if c.size > MaxStatusRanks {
		return nil, fmt.Errorf("control: rank %d: status: job of %d ranks, a status reply covers at most %d", c.rank, c.size, MaxStatusRanks)
	}
	seq, inCall := c.progress.load()
	r, err := c.call(ctx, &msg{Type: tStatus, Seq: seq, InCall: inCall}, "status", false)
	if err != nil {
		return nil, err
	}
	if len(r.Ranks) != c.size {
		return nil, fmt.Errorf("control: rank %d: status: server listed %d ranks of a job of %d", c.rank, len(r.Ranks), c.size)
	}
	return r.Ranks, nil
}

// Heartbeat returns the job's heartbeat interval, as the server announced
// it: the value Stragglers wants.
func (c *Client) Heartbeat() time.Duration { return c.heartbeat }

// Heartbeat returns the heartbeat interval in force (the configured one,
// or the default): the value Stragglers wants.
func (s *Server) Heartbeat() time.Duration { return s.cfg.HeartbeatInterval }

// rankLiveness is what the server tracks of a rank without its lock:
// the read loop stores into it on every message.
type rankLiveness struct {
	progress progress
	where    atomic.Uint64 // wire.Where of the last heartbeat
	heard    atomic.Int64  // time of the last message, in ns since Server.start (monotonic)
}

// Status returns every rank's status, in rank order. It is the view a
// rank gets from Client.Status, for any job size.
func (s *Server) Status() []RankStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusLocked()
}

func (s *Server) statusLocked() []RankStatus {
	now := time.Since(s.start)
	st := make([]RankStatus, s.cfg.Size)
	for r := range st {
		l := &s.live[r]
		seq, inCall := l.progress.load()
		st[r] = RankStatus{Rank: r, State: s.state[r], Seq: seq, InCall: inCall,
			SilentFor: max(0, now-time.Duration(l.heard.Load())), Where: wire.Where(l.where.Load())}
	}
	return st
}

// Value returns what was put at key, if anything: for the launcher,
// which reads what the ranks left for it (hcclrun --report).
func (s *Server) Value(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[key]
	return v, ok
}

// touch records that the server just read a message from rank.
func (s *Server) touch(rank int) {
	s.live[rank].heard.Store(int64(time.Since(s.start)))
}

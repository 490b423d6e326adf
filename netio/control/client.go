package control

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
)

// joinTimeout bounds the admission exchange after the handshake when ctx
// has no earlier deadline.
const joinTimeout = 10 * time.Second

// leaveTimeout bounds how long Close waits for the server to acknowledge
// a Leave by hanging up.
const leaveTimeout = time.Second

// Client is one rank's connection to the control server. Its methods are
// safe for concurrent use: several Gets and Barriers may wait at once.
type Client struct {
	rank, size int
	conn       net.Conn
	log        *slog.Logger
	heartbeat  time.Duration
	lostAfter  time.Duration

	wmu sync.Mutex // serialises writes

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan msg

	done     chan struct{} // closed by finish
	doneOnce sync.Once
	err      error         // set before done closes
	readerUp chan struct{} // closed when the read loop exits
	stopBeat chan struct{}
	closing  sync.Once
	leaving  atomic.Bool // a Leave was sent: the server hanging up is expected

	progress progress      // SetProgress; read by beatLoop and Status
	where    atomic.Uint64 // Where; read by beatLoop
}

// Dial connects rank (of a job of size ranks) to the control server at
// addr, authenticating with key, and waits until the server admits it.
// Dialling retries while the connection is refused until ctx ends (the
// launcher may not listen yet). log may be nil.
func Dial(ctx context.Context, addr string, key []byte, rank, size int, log *slog.Logger) (*Client, error) {
	return dial(ctx, addr, key, rank, size, log, nil)
}

// dial is Dial; wrap, when a test sets it, wraps the connection.
func dial(ctx context.Context, addr string, key []byte, rank, size int, log *slog.Logger, wrap func(net.Conn) net.Conn) (*Client, error) {
	if size <= 0 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("control: dial: rank %d of a job of %d", rank, size)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn, peer, err := netio.Dial(ctx, addr, key, wire.Hello{Purpose: wire.PurposeControl, Rank: uint32(rank)})
	if err != nil {
		return nil, fmt.Errorf("control: rank %d: %w", rank, err)
	}
	if peer.Purpose != wire.PurposeControl || peer.Rank != wire.LauncherRank {
		conn.Close()
		return nil, fmt.Errorf("control: rank %d: %s is not a control server (%v)", rank, addr, peer)
	}
	if wrap != nil {
		conn = wrap(conn)
	}
	c := &Client{rank: rank, size: size, conn: conn, log: log,
		pending: map[uint64]chan msg{}, done: make(chan struct{}),
		readerUp: make(chan struct{}), stopBeat: make(chan struct{})}
	// Plain reads for the join, whose deadline follows ctx; patient ones
	// from the welcome on, under the same bufio.Reader.
	pr := &patientReader{conn: conn}
	r := bufio.NewReader(pr)
	welcome, err := c.join(ctx, r)
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.heartbeat = time.Duration(welcome.Heartbeat) * time.Millisecond
	c.lostAfter = time.Duration(welcome.LostAfter) * time.Millisecond
	if c.heartbeat <= 0 || c.lostAfter <= c.heartbeat {
		conn.Close()
		return nil, fmt.Errorf("control: rank %d: server sent heartbeat %v, lost after %v", rank, c.heartbeat, c.lostAfter)
	}
	pr.wait, pr.grace = c.lostAfter, c.heartbeat
	go c.readLoop(r, pr.silence())
	go c.beatLoop()
	return c, nil
}

func (c *Client) join(ctx context.Context, r *bufio.Reader) (msg, error) {
	deadline := time.Now().Add(joinTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	b, _ := appendMsg(nil, &msg{Type: tJoin, Size: uint32(c.size)})
	if _, err := c.conn.Write(b); err != nil {
		return msg{}, fmt.Errorf("control: rank %d: join: %w", c.rank, err)
	}
	m, err := readMsg(r)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return msg{}, fmt.Errorf("control: rank %d: join: %w", c.rank, err)
	}
	switch m.Type {
	case tWelcome:
	case tRefuse:
		return msg{}, fmt.Errorf("control: rank %d: %w: %s", c.rank, ErrRefused, m.Text)
	default:
		return msg{}, fmt.Errorf("control: rank %d: join: unexpected message type %d", c.rank, m.Type)
	}
	if !stop() {
		return msg{}, fmt.Errorf("control: rank %d: join: %w", c.rank, ctx.Err())
	}
	c.conn.SetDeadline(time.Time{})
	return m, nil
}

// Rank returns the client's rank.
func (c *Client) Rank() int { return c.rank }

// Done is closed when the client can no longer be used: the job was
// aborted, the server was lost, or Close was called. Err says which.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns nil while Done is open, then an *AbortError, an error
// wrapping ErrLost, or ErrClosed.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// finish records why the client is done, once, and wakes every waiting
// call. It does not close the connection: after an abort the client still
// leaves in order when Close is called.
func (c *Client) finish(err error) {
	c.doneOnce.Do(func() {
		c.err = err
		close(c.done)
		if ae := (*AbortError)(nil); errors.As(err, &ae) {
			// Info, not Warn: the abort reaches the program as the error of
			// its next call, and the launcher prints one summary; a line
			// from every rank would bury it.
			c.log.Info("control: job aborted", "rank", c.rank, "origin", ae.Rank, "reason", ae.Reason)
		} else if !errors.Is(err, ErrClosed) {
			c.log.Warn("control: lost the control server", "rank", c.rank, "err", err)
		}
	})
}

// readLoop reads the server's messages until the connection ends; r
// reads through a patientReader that fails after silence.
func (c *Client) readLoop(r *bufio.Reader, silence time.Duration) {
	defer close(c.readerUp)
	for {
		m, err := readMsg(r)
		if err != nil {
			if isTimeout(err) {
				err = fmt.Errorf("no heartbeat for %v", silence)
			}
			if c.leaving.Load() {
				c.finish(ErrClosed)
				return
			}
			c.finish(fmt.Errorf("control: rank %d: %w at %s: %w", c.rank, ErrLost, c.conn.RemoteAddr(), err))
			c.conn.Close()
			return
		}
		switch m.Type {
		case tPing:
		case tReply, tStatusReply: // a StatusReply's Code is codeOK
			c.mu.Lock()
			ch := c.pending[m.ID]
			delete(c.pending, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m // buffered: never blocks
			}
		case tAbort:
			c.finish(&AbortError{Rank: int(m.Origin), Reason: m.Text})
		default:
			c.finish(fmt.Errorf("control: rank %d: %w at %s: unexpected message type %d", c.rank, ErrLost, c.conn.RemoteAddr(), m.Type))
			c.conn.Close()
			return
		}
	}
}

func (c *Client) beatLoop() {
	t := time.NewTicker(c.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			seq, inCall := c.progress.load()
			if err := c.write(&msg{Type: tPing, Seq: seq, InCall: inCall, Where: c.where.Load()}); err != nil {
				return
			}
		case <-c.stopBeat:
			return
		case <-c.readerUp:
			return
		}
	}
}

// write sends one message; a write that takes LostAfter means the server
// is gone.
func (c *Client) write(m *msg) error {
	b, err := appendMsg(nil, m)
	if err != nil {
		return fmt.Errorf("control: rank %d: %w", c.rank, err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.conn.SetWriteDeadline(time.Now().Add(c.lostAfter))
	if _, err := c.conn.Write(b); err != nil {
		err = fmt.Errorf("control: rank %d: %w at %s: %w", c.rank, ErrLost, c.conn.RemoteAddr(), err)
		c.finish(err)
		c.conn.Close()
		return err
	}
	return nil
}

// call sends a request and waits for its reply. If ctx ends first, a
// cancellable request (Get, Barrier) is withdrawn with a Cancel and call
// waits for the server's verdict: the server answers every request
// exactly once, in order on this connection, either with the request's
// own reply (it completed before the Cancel was read: the caller gets
// that result) or with codeCancelled (withdrawn: the caller gets ctx's
// error). So a Barrier that reports an error did not count, and one that
// counted reports success.
func (c *Client) call(ctx context.Context, m *msg, what string, cancellable bool) (msg, error) {
	select {
	case <-c.done:
		return msg{}, c.err
	default:
	}
	ch := make(chan msg, 1)
	c.mu.Lock()
	c.nextID++
	m.ID = c.nextID
	c.pending[m.ID] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, m.ID)
		c.mu.Unlock()
	}
	if err := c.write(m); err != nil {
		forget()
		return msg{}, err
	}
	var r msg
	select {
	case r = <-ch:
	case <-c.done:
		forget()
		return msg{}, c.err
	case <-ctx.Done():
		if !cancellable {
			forget()
			return msg{}, fmt.Errorf("control: rank %d: %s: %w", c.rank, what, ctx.Err())
		}
		if err := c.write(&msg{Type: tCancel, ID: m.ID}); err != nil {
			forget()
			return msg{}, err
		}
		select {
		case r = <-ch:
		case <-c.done:
			forget()
			return msg{}, c.err
		}
	}
	switch r.Code {
	case codeOK:
		return r, nil
	case codeCancelled:
		return msg{}, fmt.Errorf("control: rank %d: %s: %w", c.rank, what, ctx.Err())
	case codeAborted:
		// The Abort message is on its way (it was queued first); prefer
		// the error it carries, which names the origin.
		select {
		case <-c.done:
			return msg{}, c.err
		case <-time.After(c.lostAfter):
			return msg{}, &AbortError{Rank: LauncherOrigin, Reason: r.Text}
		}
	}
	return msg{}, fmt.Errorf("control: rank %d: %s: %s", c.rank, what, r.Text)
}

// Put stores value under key, replacing any earlier value, and wakes the
// Gets waiting for it. It returns once the server has stored it. value
// may be reused when Put returns.
func (c *Client) Put(ctx context.Context, key string, value []byte) error {
	if len(key) > MaxKeySize || len(value) > MaxValueSize {
		return fmt.Errorf("control: rank %d: put %q: key of %d bytes or value of %d bytes over the limit (%d, %d)",
			c.rank, truncate(key), len(key), len(value), MaxKeySize, MaxValueSize)
	}
	_, err := c.call(ctx, &msg{Type: tPut, Key: key, Value: value}, fmt.Sprintf("put %q", truncate(key)), false)
	return err
}

// Get returns the value stored under key, waiting until some rank puts it,
// ctx ends or the client is done. The result is the caller's. A Get whose
// ctx ends waits one round trip more for the server to confirm the
// withdrawal (and returns the value if it arrived meanwhile).
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	if len(key) > MaxKeySize {
		return nil, fmt.Errorf("control: rank %d: get: key of %d bytes, limit %d", c.rank, len(key), MaxKeySize)
	}
	r, err := c.call(ctx, &msg{Type: tGet, Key: key}, fmt.Sprintf("get %q", truncate(key)), true)
	if err != nil {
		return nil, err
	}
	return r.Value, nil
}

// Barrier returns when all ranks of the job have entered the barrier
// called name. A name may be reused: the ranks' n-th entries meet. A rank
// must not wait in the same barrier twice at once. If ctx ends first, the
// rank's entry is withdrawn and Barrier returns ctx's error, unless the
// barrier completed before the server saw the withdrawal: then it returns
// nil, so an error always means the entry did not count.
func (c *Client) Barrier(ctx context.Context, name string) error {
	if len(name) > MaxKeySize {
		return fmt.Errorf("control: rank %d: barrier: name of %d bytes, limit %d", c.rank, len(name), MaxKeySize)
	}
	_, err := c.call(ctx, &msg{Type: tBarrier, Key: name}, fmt.Sprintf("barrier %q", truncate(name)), true)
	return err
}

// Abort asks the server to abort the job with reason; every rank,
// this one included, then sees an AbortError naming this rank. The client
// is done at once; call Close to leave in order.
func (c *Client) Abort(reason string) error {
	select {
	case <-c.done:
		if ae := (*AbortError)(nil); errors.As(c.err, &ae) {
			return nil // already aborted: nothing to add
		}
		return c.err
	default:
	}
	err := c.write(&msg{Type: tAbort, Origin: int32(c.rank), Text: reason})
	c.finish(&AbortError{Rank: c.rank, Reason: reason})
	return err
}

// Close leaves the job in order (the server reports RankLeft rather than
// RankLost) and releases the connection. Calls still waiting fail with
// ErrClosed. Close is idempotent.
func (c *Client) Close() error {
	c.closing.Do(func() {
		close(c.stopBeat)
		select {
		case <-c.readerUp: // the connection is already gone
		default:
			c.leaving.Store(true)
			if err := c.write(&msg{Type: tLeave}); err == nil {
				// The server hangs up after a Leave; wait for that so
				// that the Leave is not lost in a reset.
				select {
				case <-c.readerUp:
				case <-time.After(leaveTimeout):
				}
			}
		}
		c.finish(ErrClosed)
		c.conn.Close()
		<-c.readerUp
	})
	return nil
}

// truncate shortens a key for an error message.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

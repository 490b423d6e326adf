package shmlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/internal/ratelog"
	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/shm"
)

// ErrListenerClosed is returned by Accept after Close.
var ErrListenerClosed = errors.New("shmlink: listener closed")

// A flood of refused connections (another user's, a port scan of this
// user's) logs the first refusedBurst in full, then one line per
// refusedEvery with the count, and one at Close: a handful of lines
// instead of one per connection.
const (
	refusedBurst = 5
	refusedEvery = 5 * time.Second
)

// Listener accepts links from higher ranks of the same job on this host.
// A connection from another user is refused at once (peercred.go); each
// other one is set up (handshake, segment) in a goroutine of its own, so
// a stranger or a stalled peer delays nobody, and at most MaxSetups of
// them at a time before authentication (admit.go). Refused, evicted and
// dropped connections are logged at WARN, rate-limited. Its methods are
// safe for concurrent use.
type Listener struct {
	rank  int
	key   []byte
	addr  string
	ln    *net.UnixListener
	log   *slog.Logger
	wait  shm.WaitPolicy // of the links accepted (ListenConfig.Wait)
	share bool           // their offers of shared reads (ListenConfig.NoShare)

	setups setups
	// limit rate-limits the WARN lines about refused connections;
	// foreign, evicted and dropped count them by kind.
	limit   *ratelog.Limiter
	foreign atomic.Int64 // from another user
	evicted atomic.Int64 // by newer connections
	dropped atomic.Int64 // failed their set-up, not by a rank of the job

	ready  chan accepted
	ctx    context.Context // cancelled by Close: aborts set-ups in progress
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

type accepted struct {
	link *Link
	peer int
}

// ListenConfig holds the knobs of a Listener. The zero value is ready to
// use.
type ListenConfig struct {
	// Tag is the last element of the socket name (name.go); "" draws 128
	// random bits, which nobody can guess. Whoever knows a tag can take
	// the name first, and Listen then fails with ErrNameTaken: tests set
	// one to make that happen.
	Tag string
	// MaxSetups bounds the set-ups in progress not authenticated yet;
	// zero means DefaultMaxSetups.
	MaxSetups int
	// Wait and NoShare are for the links accepted what DialConfig's are
	// for the dialer's side: how this side waits, and whether it offers
	// shares of its copies. The dialer decides the rest of a link.
	Wait    shm.WaitPolicy
	NoShare bool
}

// Listen is ListenConfig.Listen with the zero ListenConfig.
func Listen(jobID string, rank int, key []byte, log *slog.Logger) (*Listener, error) {
	return ListenConfig{}.Listen(jobID, rank, key, log)
}

// Listen starts accepting links for rank of job jobID on an abstract unix
// socket of a name of its own (Addr), which dialers must be told. key is
// the job key; log receives the WARN lines for refused and dropped
// connections (nil discards them). A name already taken fails with an
// error wrapping ErrNameTaken.
func (lc ListenConfig) Listen(jobID string, rank int, key []byte, log *slog.Logger) (*Listener, error) {
	tag := lc.Tag
	if tag == "" {
		tag = randomTag()
	}
	addr, err := socketName(jobID, rank, tag)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("shmlink: rank %d listen on %s: %w (%w)", rank, addr, ErrNameTaken, err)
		}
		return nil, fmt.Errorf("shmlink: rank %d listen on %s: %w", rank, addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Listener{
		rank: rank, key: append([]byte(nil), key...), addr: addr, ln: ln, log: log,
		wait: lc.Wait, share: !lc.NoShare,
		ready: make(chan accepted), ctx: ctx, cancel: cancel,
		limit: ratelog.New(refusedBurst, refusedEvery, func(n int, over time.Duration) {
			log.Warn(fmt.Sprintf("shmlink: refused %d more connections in the last %v", n, over.Round(100*time.Millisecond)), "rank", rank, "addr", addr)
		}),
	}
	l.setups.max = lc.MaxSetups
	if l.setups.max <= 0 {
		l.setups.max = DefaultMaxSetups
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Addr returns the socket name, e.g. "@hcclrun/job42/0/3f9c...": what the
// dialers put in DialConfig.Addr.
func (l *Listener) Addr() string { return l.addr }

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			// EMFILE and friends: back off instead of spinning.
			l.warn("shmlink: accept failed", "err", err)
			select {
			case <-time.After(50 * time.Millisecond):
			case <-l.ctx.Done():
				return
			}
			continue
		}
		// Before anything that costs: another user's connection gets
		// no goroutine, no slot and no handshake.
		if err := checkPeerUser(c); err != nil {
			c.Close()
			l.foreign.Add(1)
			l.warn("shmlink: refused a connection", "err", err)
			continue
		}
		su, evicted := l.setups.admit(c)
		if evicted != nil {
			l.evicted.Add(1)
			l.warn("shmlink: evicted the oldest set-up in progress", "limit", l.setups.max)
		}
		l.wg.Add(1)
		go l.setup(su)
	}
}

// setup turns one connection into a Link and offers it to Accept.
func (l *Listener) setup(su *setup) {
	defer l.wg.Done()
	conn := su.conn
	link, peer, err := l.serve(su)
	if err != nil {
		// Off the list first, so that a failed set-up is not evicted
		// (and counted) as well.
		evicted := !l.setups.settle(su)
		conn.Close()
		var gaveUp *dialerGaveUp
		switch {
		case l.ctx.Err() != nil:
		case evicted: // counted when it was evicted
		case errors.As(err, &gaveUp):
			// An authenticated rank that hung up before the segment
			// came (its /dev/shm full, say) says why itself.
			l.log.Debug("shmlink: a rank gave up its link", "rank", l.rank, "peer", gaveUp.peer, "err", gaveUp.err)
		default:
			l.dropped.Add(1)
			l.warn("shmlink: dropped a connection", "err", err)
		}
		return
	}
	select {
	case l.ready <- accepted{link, peer}:
	case <-l.ctx.Done():
		link.Close()
	}
}

func (l *Listener) serve(su *setup) (*Link, int, error) {
	conn := su.conn
	ctx, cancel := context.WithTimeout(l.ctx, setupTimeout)
	defer cancel()
	me := wire.Hello{Purpose: wire.PurposeShm, Rank: uint32(l.rank)}
	them, err := wire.Handshake(ctx, conn, l.key, wire.RoleServer, me)
	if err != nil {
		return nil, 0, err
	}
	// Authenticated: a rank of the job, which no newer connection may
	// evict any more.
	if !l.setups.settle(su) {
		return nil, 0, errors.New("evicted")
	}
	if them.Purpose != wire.PurposeShm {
		return nil, 0, fmt.Errorf("connection for %v, not shm", them.Purpose)
	}
	peer := int(them.Rank)
	if peer == l.rank || them.Rank == wire.LauncherRank {
		return nil, 0, fmt.Errorf("dialer claims rank %d", peer)
	}
	stop := deadlineFrom(ctx, conn)
	defer stop()
	msg := make([]byte, segMsgSize)
	seg, extra, err := shm.Receive(conn, msg)
	if err != nil {
		if errors.Is(err, io.EOF) && ctx.Err() == nil {
			return nil, 0, &dialerGaveUp{peer: peer, err: err}
		}
		return nil, 0, fmt.Errorf("rank %d: %w", peer, ctxOr(ctx, err))
	}
	p := noPipes
	m, err := decodeSegMsg(msg)
	switch {
	case err != nil:
	case m.pipes && len(extra) == 2:
		p = pipes{in: extra[0], out: extra[1]}
		extra = nil
	case m.pipes || len(extra) != 0:
		err = fmt.Errorf("%d descriptors came with the segment, the message says pipes: %v", len(extra), m.pipes)
	}
	for _, fd := range extra {
		unix.Close(fd)
	}
	if err == nil && !m.lazy {
		// Populated and read before the ack, while the dialer reads its
		// own mapping: after it, the dialer's first frames would wait for
		// this side's reads.
		seg.ReadAhead()
		warmRings(seg)
	}
	if err == nil {
		var rx, tx *shm.Ring
		rx, tx, err = ringsOf(seg.Bytes(), m.capacity, false, l.wait)
		if err == nil {
			tx.PublishAddr() // before the ack, after which the dialer probes it
			if _, err = conn.Write([]byte{segAck}); err == nil {
				err = conn.SetDeadline(time.Time{})
			}
		}
		if err == nil {
			return newLink(l.rank, peer, m.tag, seg, tx, rx, conn, m.direct, p, l.share), peer, nil
		}
	}
	p.close()
	seg.Close()
	return nil, 0, fmt.Errorf("rank %d: %w", peer, err)
}

// warn logs a refused connection at WARN, or counts it for the next
// report (refusedBurst).
func (l *Listener) warn(msg string, args ...any) {
	if l.limit.Allow() {
		l.log.Warn(msg, append([]any{"rank", l.rank, "addr", l.addr}, args...)...)
	}
}

// Accept waits for the next link and returns it with the peer's rank (as
// proved in the handshake).
func (l *Listener) Accept(ctx context.Context) (*Link, int, error) {
	select {
	case a := <-l.ready:
		return a.link, a.peer, nil
	case <-ctx.Done():
		return nil, 0, fmt.Errorf("shmlink: rank %d accept: %w", l.rank, ctx.Err())
	case <-l.ctx.Done():
		return nil, 0, fmt.Errorf("shmlink: rank %d accept: %w", l.rank, ErrListenerClosed)
	}
}

// Close stops listening and aborts set-ups in progress. Links already
// returned by Accept stay open.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		l.cancel()
		err = l.ln.Close()
		l.wg.Wait()
		l.limit.Close() // every refusal is counted by now: report the rest
	})
	return err
}

// dialerGaveUp is a set-up that an authenticated peer ended by hanging up
// before it sent the segment.
type dialerGaveUp struct {
	peer int
	err  error
}

func (e *dialerGaveUp) Error() string {
	return fmt.Sprintf("rank %d hung up before sending the segment: %v", e.peer, e.err)
}

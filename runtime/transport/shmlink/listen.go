package shmlink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/shm"
)

// ErrListenerClosed is returned by Accept after Close.
var ErrListenerClosed = errors.New("shmlink: listener closed")

// Listener accepts links from higher ranks of the same job on this host.
// Each incoming connection is set up (handshake, segment) in a goroutine of
// its own, so a stranger or a stalled peer delays nobody; failures are
// logged at WARN and dropped. Its methods are safe for concurrent use.
type Listener struct {
	rank int
	key  []byte
	addr string
	ln   *net.UnixListener
	log  *slog.Logger

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
}

// Listen is ListenConfig.Listen with the zero ListenConfig.
func Listen(jobID string, rank int, key []byte, log *slog.Logger) (*Listener, error) {
	return ListenConfig{}.Listen(jobID, rank, key, log)
}

// Listen starts accepting links for rank of job jobID on an abstract unix
// socket of a name of its own (Addr), which dialers must be told. key is
// the job key; log receives the WARN lines for dropped connections (nil
// discards them). A name already taken fails with an error wrapping
// ErrNameTaken.
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
		ready: make(chan accepted), ctx: ctx, cancel: cancel,
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
			l.log.Warn("shmlink: accept failed", "rank", l.rank, "addr", l.addr, "err", err)
			select {
			case <-time.After(50 * time.Millisecond):
			case <-l.ctx.Done():
				return
			}
			continue
		}
		l.wg.Add(1)
		go l.setup(c)
	}
}

// setup turns one connection into a Link and offers it to Accept.
func (l *Listener) setup(conn *net.UnixConn) {
	defer l.wg.Done()
	link, peer, err := l.serve(conn)
	if err != nil {
		conn.Close()
		var gaveUp *dialerGaveUp
		switch {
		case l.ctx.Err() != nil:
		case errors.As(err, &gaveUp):
			// An authenticated rank that hung up before the segment
			// came (its /dev/shm full, say) says why itself.
			l.log.Debug("shmlink: a rank gave up its link", "rank", l.rank, "peer", gaveUp.peer, "err", gaveUp.err)
		default:
			l.log.Warn("shmlink: dropped a connection", "rank", l.rank, "addr", l.addr, "err", err)
		}
		return
	}
	select {
	case l.ready <- accepted{link, peer}:
	case <-l.ctx.Done():
		link.Close()
	}
}

func (l *Listener) serve(conn *net.UnixConn) (*Link, int, error) {
	ctx, cancel := context.WithTimeout(l.ctx, setupTimeout)
	defer cancel()
	me := netio.Hello{Purpose: netio.PurposeShm, Rank: uint32(l.rank)}
	them, err := netio.Handshake(ctx, conn, l.key, netio.RoleServer, me)
	if err != nil {
		return nil, 0, err
	}
	if them.Purpose != netio.PurposeShm {
		return nil, 0, fmt.Errorf("connection for %v, not shm", them.Purpose)
	}
	peer := int(them.Rank)
	if peer == l.rank || them.Rank == netio.LauncherRank {
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
		seg.ReadAhead()
	}
	if err == nil {
		var rx, tx *shm.Ring
		rx, tx, err = ringsOf(seg.Bytes(), m.capacity, false)
		if err == nil {
			tx.PublishAddr() // before the ack, after which the dialer probes it
			if _, err = conn.Write([]byte{segAck}); err == nil {
				err = conn.SetDeadline(time.Time{})
			}
		}
		if err == nil {
			return newLink(l.rank, peer, m.channel, seg, tx, rx, conn, m.direct, p), peer, nil
		}
	}
	p.close()
	seg.Close()
	return nil, 0, fmt.Errorf("rank %d: %w", peer, err)
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

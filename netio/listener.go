package netio

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hcclrun/hcclrun/internal/ratelog"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// A flood of refused connections (a port scan, another user's flood, a
// misconfigured job dialling us in a loop) logs the first refusedBurst in
// full, then one line per refusedEvery with the count, and one at Close:
// a handful of lines instead of one per connection.
const (
	refusedBurst = 5
	refusedEvery = 5 * time.Second
)

// ListenConfig holds the knobs of a Listener. The zero value is ready to
// use.
type ListenConfig struct {
	// Network is "tcp" (the default), "tcp4", "tcp6" or "unix".
	Network string
	// HandshakeTimeout bounds each incoming handshake; zero means
	// DefaultHandshakeTimeout. A peer that says nothing (a port scanner,
	// a slow loris) is dropped when it expires.
	HandshakeTimeout time.Duration
	// MaxHandshakes bounds the handshakes in progress at once. A
	// connection arriving beyond it evicts the oldest one still in
	// progress: silent connections (a scan, a slow loris, a flood) then
	// cannot hold every slot and lock the job's ranks out, since a real
	// rank's handshake takes milliseconds and a staller's takes the whole
	// timeout. Zero means 256.
	MaxHandshakes int
}

// Listener accepts connections and authenticates each one before Accept
// returns it. Each handshake runs in its own goroutine with its own
// deadline, so a connection that fails (wrong key, garbage, silence) is
// closed without delaying the connections behind it, and logged at WARN:
// the first few of a flood in full, the others as a count every few
// seconds. Its methods are safe for concurrent use.
type Listener struct {
	inner   net.Listener
	key     []byte
	me      wire.Hello
	log     *slog.Logger
	timeout time.Duration
	max     int // MaxHandshakes

	pendMu  sync.Mutex
	pending *list.List // of net.Conn, handshakes in progress, oldest first; an evicted one's Value is nil

	refused *ratelog.Limiter // of the WARN lines for dropped and evicted connections

	ready  chan accepted
	ctx    context.Context // cancelled by Close: ends handshakes in progress
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
	failed    chan struct{} // closed when the accept loop died on its own
	failErr   error
}

type accepted struct {
	conn net.Conn
	peer wire.Hello
}

// Listen listens on addr (host:port, port 0 picks one) with the zero
// ListenConfig. See ListenConfig.Listen.
func Listen(addr string, key []byte, me wire.Hello, log *slog.Logger) (*Listener, error) {
	return ListenConfig{}.Listen(addr, key, me, log)
}

// Listen listens on addr and returns a Listener that authenticates every
// connection with key, presenting me. log receives the WARN lines for
// dropped connections; nil discards them.
func (lc ListenConfig) Listen(addr string, key []byte, me wire.Hello, log *slog.Logger) (*Listener, error) {
	if len(key) < wire.MinKeySize {
		return nil, fmt.Errorf("netio: listen %s: job key of %d bytes, want at least %d", addr, len(key), wire.MinKeySize)
	}
	network := lc.Network
	if network == "" {
		network = "tcp"
	}
	inner, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("netio: listen: %w", err)
	}
	return lc.NewListener(inner, key, me, log), nil
}

// NewListener authenticates the connections of an existing listener, which
// the returned Listener owns from now on. key must be at least 16 bytes;
// a shorter one makes every handshake fail.
func (lc ListenConfig) NewListener(inner net.Listener, key []byte, me wire.Hello, log *slog.Logger) *Listener {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := lc.HandshakeTimeout
	if timeout <= 0 {
		timeout = wire.DefaultHandshakeTimeout
	}
	n := lc.MaxHandshakes
	if n <= 0 {
		n = 256
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := inner.Addr().String()
	l := &Listener{
		inner:   inner,
		key:     append([]byte(nil), key...),
		me:      me,
		log:     log,
		timeout: timeout,
		max:     n,
		pending: list.New(),
		ready:   make(chan accepted, 16),
		ctx:     ctx,
		cancel:  cancel,
		failed:  make(chan struct{}),
		refused: ratelog.New(refusedBurst, refusedEvery, func(n int, over time.Duration) {
			log.Warn(fmt.Sprintf("netio: refused %d more connections in the last %v", n, roundSpan(over)), "addr", addr)
		}),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if l.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// EMFILE and friends: another connection closing will cure
			// it, so wait a little instead of spinning or giving up.
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				l.log.Warn("netio: accept", "addr", l.inner.Addr().String(), "err", err)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			l.failErr = fmt.Errorf("netio: accept on %v: %w", l.inner.Addr(), err)
			close(l.failed)
			return
		}
		el := l.admit(c)
		l.wg.Add(1)
		go l.authenticate(c, el)
	}
}

// admit records c as a handshake in progress, evicting the oldest one when
// MaxHandshakes are already in progress.
func (l *Listener) admit(c net.Conn) *list.Element {
	l.pendMu.Lock()
	defer l.pendMu.Unlock()
	if l.pending.Len() >= l.max {
		front := l.pending.Front()
		oldest := l.pending.Remove(front).(net.Conn)
		front.Value = nil // tells its goroutine that it was refused here
		if l.refused.Allow() {
			l.log.Warn("netio: evicted the oldest handshake in progress",
				"remote", oldest.RemoteAddr().String(), "limit", l.max)
		}
		oldest.Close() // its handshake fails at once and its goroutine ends
	}
	return l.pending.PushBack(c)
}

// settle removes a finished handshake from the pending list and tells
// whether it had been evicted (and counted as refused) meanwhile.
func (l *Listener) settle(el *list.Element) (evicted bool) {
	l.pendMu.Lock()
	defer l.pendMu.Unlock()
	evicted = el.Value == nil
	l.pending.Remove(el)
	return evicted
}

func (l *Listener) authenticate(c net.Conn, el *list.Element) {
	defer l.wg.Done()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.timeout)
	peer, err := wire.Handshake(ctx, c, l.key, wire.RoleServer, l.me)
	cancel()
	// An evicted connection is closed even if its handshake got through
	// just before, and was logged once already.
	if evicted := l.settle(el); err != nil || evicted {
		if !evicted && l.ctx.Err() == nil && l.refused.Allow() {
			l.log.Warn("netio: dropped connection", "remote", c.RemoteAddr().String(), "err", err)
		}
		c.Close()
		return
	}
	select {
	case l.ready <- accepted{c, peer}:
	case <-l.ctx.Done():
		c.Close()
	}
}

// Accept waits for the next authenticated connection and returns it with
// the identity its peer proved. After Close it fails with an error that
// wraps net.ErrClosed.
func (l *Listener) Accept() (net.Conn, wire.Hello, error) {
	select {
	case <-l.ctx.Done():
		return nil, wire.Hello{}, fmt.Errorf("netio: accept on %v: %w", l.inner.Addr(), net.ErrClosed)
	default:
	}
	select {
	case a := <-l.ready:
		return a.conn, a.peer, nil
	case <-l.ctx.Done():
		return nil, wire.Hello{}, fmt.Errorf("netio: accept on %v: %w", l.inner.Addr(), net.ErrClosed)
	case <-l.failed:
		return nil, wire.Hello{}, l.failErr
	}
}

// roundSpan rounds a report's period for reading: "5s", "1.2s", "340ms".
func roundSpan(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// Addr returns the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Close stops listening, aborts the handshakes in progress and closes the
// authenticated connections nobody has accepted yet. Connections already
// returned by Accept are the caller's and stay open.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.cancel()
		l.closeErr = l.inner.Close()
		l.wg.Wait()
		l.refused.Close() // every refusal is counted by now: report the rest
		for {
			select {
			case a := <-l.ready:
				a.conn.Close()
			default:
				return
			}
		}
	})
	return l.closeErr
}

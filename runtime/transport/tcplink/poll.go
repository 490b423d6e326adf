package tcplink

import (
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pollConn is a TCP connection whose reads and writes spin for spin on a
// socket that is not ready before they park (syscall.RawConn), as a rank
// waiting on shared memory spins before it sleeps (Config.Spin). Deadlines
// (Link's cancellation) take effect once it parks: within spin. While a
// read spins it writes the started sends of its group (async.go). One
// goroutine may read while another writes; each side keeps its call's
// state here, and the functions handed to the RawConn are bound once, so
// that a call allocates nothing.
type pollConn struct {
	net.Conn
	raw   syscall.RawConn
	spin  time.Duration
	group *Group

	rbuf   []byte
	rn     int
	rerr   error
	rspin  spinner
	readFn func(fd uintptr) bool

	wbufs      [][]byte
	wn         int
	werr       error
	wspin      spinner
	wone       [1][]byte
	iov        [maxIovecs]unix.Iovec // rawWritev's scratch
	writeFn    func(fd uintptr) bool
	tryWriteFn func(fd uintptr) bool
}

// newPollConn wraps conn when it exposes its socket, else returns it.
func newPollConn(conn net.Conn, spin time.Duration, group *Group) net.Conn {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return conn
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return conn
	}
	c := &pollConn{Conn: conn, raw: raw, spin: max(spin, 0), group: group}
	c.readFn, c.writeFn, c.tryWriteFn = c.readSome, c.writeSome, c.writeOnce
	return c
}

func (c *pollConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rbuf, c.rn, c.rerr = p, 0, nil
	c.rspin = spinner{d: c.spin}
	err := c.raw.Read(c.readFn)
	n, rerr := c.rn, c.rerr
	c.rbuf = nil // do not keep the caller's buffer alive
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: c.RemoteAddr(), Err: rerr}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readSome is Read's RawConn function: it reports whether it is done,
// false to wait for the socket. While it spins on an empty socket it
// writes what it can of its group's started sends, and before it parks
// it hands them to their links' flushers (async.go).
func (c *pollConn) readSome(fd uintptr) bool {
	for {
		c.rn, c.rerr = rawRead(int(fd), c.rbuf)
		switch {
		case c.rerr == unix.EINTR:
		case c.rerr != unix.EAGAIN:
			return true
		case !c.rspin.again():
			c.group.handOff()
			return false
		default:
			c.group.progress()
		}
	}
}

func (c *pollConn) Write(p []byte) (int, error) {
	c.wone[0] = p
	n, err := c.writev(c.wone[:])
	c.wone[0] = nil
	return n, err
}

// writev writes every byte of bufs, in order, with writev(2). It consumes
// bufs.
func (c *pollConn) writev(bufs [][]byte) (int, error) {
	total := 0
	c.wspin = spinner{d: c.spin}
	bufs = consume(bufs, 0) // writev(2) of nothing returns 0 for ever
	for {
		if len(bufs) == 0 {
			return total, nil
		}
		c.wbufs, c.wn, c.werr = bufs, 0, nil
		err := c.raw.Write(c.writeFn)
		n, werr := c.wn, c.werr
		c.wbufs = nil
		if err != nil {
			return total, err
		}
		if werr != nil {
			return total, &net.OpError{Op: "write", Net: "tcp", Addr: c.RemoteAddr(), Err: werr}
		}
		total += n
		bufs = consume(bufs, n)
	}
}

// tryWritev writes what the socket takes of bufs now, with one writev(2),
// without waiting: 0 bytes and no error when the socket is full. It does
// not consume bufs.
func (c *pollConn) tryWritev(bufs [][]byte) (int, error) {
	c.wbufs, c.wn, c.werr = bufs, 0, nil
	err := c.raw.Write(c.tryWriteFn)
	n, werr := c.wn, c.werr
	c.wbufs = nil
	switch {
	case err != nil:
		return 0, err
	case werr == unix.EAGAIN:
		return 0, nil
	case werr != nil:
		return 0, &net.OpError{Op: "write", Net: "tcp", Addr: c.RemoteAddr(), Err: werr}
	}
	return n, nil
}

// writeOnce is tryWritev's RawConn function: one writev, never a wait.
func (c *pollConn) writeOnce(fd uintptr) bool {
	for {
		c.wn, c.werr = rawWritev(int(fd), c.wbufs, &c.iov)
		if c.werr != unix.EINTR {
			return true
		}
	}
}

// writeSome is writev's RawConn function, as readSome is Read's.
func (c *pollConn) writeSome(fd uintptr) bool {
	for {
		c.wn, c.werr = rawWritev(int(fd), c.wbufs, &c.iov)
		switch {
		case c.werr == unix.EINTR:
		case c.werr != unix.EAGAIN:
			return true
		case !c.wspin.again():
			return false
		}
	}
}

// spinner says whether a socket that was not ready should be tried again
// at once: for d from the first refusal, once per call (after the poller's
// wait the socket is ready, or the wait failed).
type spinner struct {
	d     time.Duration
	start time.Time
	done  bool
}

func (s *spinner) again() bool {
	if s.done || s.d <= 0 {
		return false
	}
	if s.start.IsZero() {
		s.start = time.Now()
		return true
	}
	if time.Since(s.start) < s.d {
		return true
	}
	s.done = true
	return false
}

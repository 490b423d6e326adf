package tcplink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
)

// readBufferBytes sizes the buffered reader: big enough to hold many small
// frames, small compared with the payloads that bypass it.
const readBufferBytes = 64 << 10

// frameBytes is the largest payload of a frame of a started send
// (StartSend): fewer, larger frames than the executor's segments cost
// fewer wake-ups (docs/measurements.md#tcp-frames). A multiple of every
// element size.
const frameBytes = 1 << 20

// smallFrame is the payload size up to which header and payload are copied
// into one buffer and written with a single write.
const smallFrame = 4 << 10

// Link is a transport.Link over a TCP connection. One goroutine may send
// while another receives. Its sends can also be started and left to
// finish (transport.AsyncSender, async.go): then the process's reads, on
// any link, and a goroutine of the link's write the rest.
type Link struct {
	conn  net.Conn
	poll  *pollConn // conn, when it spins before it parks (poll.go)
	peer  int
	group *Group // whose reads write this link's started sends (async.go)

	sendHdr [wire.HeaderSize + smallFrame]byte
	vec     [2][]byte
	bufs    net.Buffers
	r       *bufio.Reader
	recvHdr [wire.HeaderSize]byte
	pending int // payload bytes of the last header read, not yet received

	async asyncSend

	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error
}

// Config holds what a rank chooses for its TCP links. The zero value is
// ready to use: links that park at once, each a group of its own.
type Config struct {
	// Spin is how long a read or write that finds its socket not ready
	// retries it before it parks on Go's network poller, 0 parking at
	// once (Go's own behaviour). Parking costs a wake-up through the
	// poller and the scheduler at every frame of a transfer, which a rank
	// with a core of its own should not pay, and a rank without one must
	// not spin (docs/measurements.md#tcp-spin).
	Spin time.Duration
	// Group is the links whose reads write each other's started sends:
	// all the links of one rank's communicator (async.go). nil makes the
	// link a group of its own.
	Group *Group
	// Socket is applied to the connections Transport dials and accepts
	// (netio.Tune); New leaves its connection as it is.
	Socket netio.SocketOptions
}

// New wraps an authenticated connection to peer: Config.New with the zero
// Config.
func New(conn net.Conn, peer int) *Link { return Config{}.New(conn, peer) }

// New wraps an authenticated connection to peer, as cfg says.
func (cfg Config) New(conn net.Conn, peer int) *Link {
	group := cfg.Group
	if group == nil {
		group = new(Group)
	}
	conn = newPollConn(conn, cfg.Spin, group)
	poll, _ := conn.(*pollConn)
	l := &Link{conn: conn, poll: poll, peer: peer, group: group, r: bufio.NewReaderSize(conn, readBufferBytes), closed: make(chan struct{})}
	l.async.wake = make(chan struct{}, 1)
	return l
}

// Send transmits h and p.
func (l *Link) Send(ctx context.Context, h *wire.Header, p []byte) error {
	if int(h.Len) != len(p) {
		return fmt.Errorf("tcplink: header says %d bytes, payload has %d", h.Len, len(p))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// A started send goes first: frames stay in order.
	l.async.mu.Lock()
	defer l.async.mu.Unlock()
	if err := l.finish(ctx); err != nil {
		return err
	}
	defer l.watch(ctx)()
	h.Encode(l.sendHdr[:])
	var err error
	if len(p) <= smallFrame {
		n := copy(l.sendHdr[wire.HeaderSize:], p)
		_, err = l.conn.Write(l.sendHdr[:wire.HeaderSize+n])
	} else {
		// WriteTo consumes the slice it is called on; rebuilding it from a
		// fixed array each time keeps writev free of allocations.
		l.vec = [2][]byte{l.sendHdr[:wire.HeaderSize], p}
		if l.poll != nil {
			_, err = l.poll.writev(l.vec[:])
		} else {
			l.bufs = l.vec[:]
			_, err = l.bufs.WriteTo(l.conn)
		}
		l.vec = [2][]byte{} // do not keep the caller's buffer alive
	}
	return l.wrap(ctx, "send to", err)
}

// RecvHeader reads the next frame header.
func (l *Link) RecvHeader(ctx context.Context, h *wire.Header) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	defer l.watch(ctx)()
	if _, err := io.ReadFull(l.r, l.recvHdr[:]); err != nil {
		return l.wrap(ctx, "receive from", err)
	}
	if err := h.Decode(l.recvHdr[:]); err != nil {
		return fmt.Errorf("tcplink: from rank %d: %w", l.peer, err)
	}
	l.pending = int(h.Len)
	return nil
}

// RecvPayload reads the payload of the last header into p, whose length
// must be the header's: reading more would wait for the next frame's
// bytes, less leave the stream out of step.
func (l *Link) RecvPayload(ctx context.Context, p []byte) error {
	if len(p) != l.pending {
		return fmt.Errorf("tcplink: receive from rank %d: payload of %d bytes, the header says %d", l.peer, len(p), l.pending)
	}
	l.pending = 0
	if len(p) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	defer l.watch(ctx)()
	_, err := io.ReadFull(l.r, p)
	return l.wrap(ctx, "receive from", err)
}

// Shut closes the connection: a socket's calls fail safely whenever it
// closes, so Shut is Close.
func (l *Link) Shut() { l.Close() }

// Close closes the connection; pending calls fail, and so does a started
// send, whose flusher ends.
func (l *Link) Close() error {
	l.closeOnce.Do(func() {
		l.closeErr = l.conn.Close()
		close(l.closed)
		// Whoever writes fails now, and lets go of the send.
		a := &l.async
		a.mu.Lock()
		if a.busy.Load() {
			a.done(net.ErrClosed)
		}
		a.mu.Unlock()
	})
	return l.closeErr
}

// watch makes a cancellation of ctx interrupt the blocking call by setting a
// past deadline. A context that can never be cancelled costs nothing.
func (l *Link) watch(ctx context.Context) (stop func()) {
	if ctx.Done() == nil {
		return func() {}
	}
	unregister := context.AfterFunc(ctx, func() { l.conn.SetDeadline(time.Unix(1, 0)) })
	// When unregister reports false the deadline has been set: the call
	// fails, and the link is unusable afterwards, as transport.Link says.
	return func() { unregister() }
}

func (l *Link) wrap(ctx context.Context, what string, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The deadline set by watch caused err: report the cancellation.
		return fmt.Errorf("tcplink: %s rank %d: %w", what, l.peer, ctxErr)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("tcplink: %s rank %d: connection closed by the peer: %w", what, l.peer, err)
	}
	return fmt.Errorf("tcplink: %s rank %d: %w", what, l.peer, err)
}

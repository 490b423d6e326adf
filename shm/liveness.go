package shm

import (
	"errors"
	"fmt"
	"io"
	"net"
)

// Watch turns conn, the unix socket to the peer that carried the segment,
// into a liveness channel: neither side writes to it after set-up, so a read
// returns only when the peer's end closes, which the kernel does when the
// peer exits for any reason, SIGKILL included (EOF, or ECONNRESET when data
// was unread). Watch then aborts rings (see Ring.Abort), waking any waiter
// at once, and returns the cause. If this process closed conn itself, Watch
// returns nil and leaves the rings alone. Run it in its own goroutine, and
// before unmapping the segment, close conn and wait for Watch to return:
// an Abort after the unmap would write to memory that is gone.
func Watch(conn net.Conn, rings ...*Ring) error {
	var b [1]byte
	n, err := conn.Read(b[:])
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	var cause error
	switch {
	case n > 0:
		cause = errors.New("unexpected data on the liveness socket")
	case errors.Is(err, io.EOF):
		cause = errors.New("liveness socket closed (peer exited)")
	default:
		cause = fmt.Errorf("liveness socket: %w", err)
	}
	for _, r := range rings {
		r.Abort(cause)
	}
	return cause
}

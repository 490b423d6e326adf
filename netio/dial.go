package netio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// Backoff between dial attempts refused by the peer: ranks start at
// different times, so the first attempts of an early rank routinely find
// nobody listening yet. Doubling from 10 ms to 500 ms keeps a quick start
// quick without hammering a peer that takes seconds.
const (
	dialBackoffMin = 10 * time.Millisecond
	dialBackoffMax = 500 * time.Millisecond
)

// Dial connects to addr over TCP, retrying with backoff while the
// connection is refused until ctx ends, sets TCP_NODELAY and runs the
// handshake as RoleClient. It returns the authenticated connection and the
// identity the listener proved. A refusal, or a listener that hangs up
// during the handshake, is retried; other errors (no route, a failed
// proof) are not: a wrong key does not get better.
func Dial(ctx context.Context, addr string, key []byte, me wire.Hello) (net.Conn, wire.Hello, error) {
	var d net.Dialer
	backoff := dialBackoffMin
	for attempt := 1; ; attempt++ {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			if tc, ok := c.(*net.TCPConn); ok {
				if err := tc.SetNoDelay(true); err != nil {
					c.Close()
					return nil, wire.Hello{}, fmt.Errorf("netio: dial %s: nodelay: %w", addr, err)
				}
			}
			peer, err := wire.Handshake(ctx, c, key, wire.RoleClient, me)
			if err == nil {
				return c, peer, nil
			}
			c.Close()
			// A listener that hung up before the handshake ended (it
			// evicted us to make room during a flood of stalled
			// connections) may take us on a second try; a proof that
			// failed will not get better.
			if !hungUp(err) || ctx.Err() != nil {
				return nil, wire.Hello{}, fmt.Errorf("netio: dial %s: %w", addr, err)
			}
		} else if !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			return nil, wire.Hello{}, fmt.Errorf("netio: dial %s (attempt %d): %w", addr, attempt, err)
		}
		// Jitter keeps N ranks that were refused together from coming
		// back together.
		wait := backoff/2 + rand.N(backoff/2+1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, wire.Hello{}, fmt.Errorf("netio: dial %s: gave up after %d refused attempts: %w (%v)", addr, attempt, ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, dialBackoffMax)
	}
}

// hungUp tells whether a handshake failed because the other side closed
// the connection, as opposed to a failed proof or garbage.
func hungUp(err error) bool {
	return !errors.Is(err, wire.ErrAuth) && !errors.Is(err, wire.ErrNotHandshake) &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
}

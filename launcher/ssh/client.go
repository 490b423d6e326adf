package ssh

import (
	"errors"
	"fmt"
	"sync"
	"time"

	xssh "golang.org/x/crypto/ssh"
)

// Client is one authenticated SSH connection. It is safe for concurrent use: many
// sessions may run on it at once (up to the server's MaxSessions, 10 by default).
type Client struct {
	target Target
	ssh    *xssh.Client
	done   chan struct{} // closed when the connection has ended, for whatever reason

	once sync.Once
	err  error // why it ended; set before done is closed
}

func newClient(t Target, c *xssh.Client, o Options) *Client {
	cl := &Client{target: t, ssh: c, done: make(chan struct{})}
	go func() {
		err := c.Wait()
		cl.end(&Error{Op: "wait", Target: t.String(), Kind: ErrConnLost, Err: err})
	}()
	go cl.keepalive(o.KeepaliveInterval, o.KeepaliveTimeout)
	return cl
}

// Target is the host this client is connected to.
func (c *Client) Target() Target { return c.target }

// Done is closed when the connection has ended: closed by Close, by the server, or by
// the keepalive after an unanswered request. Err then says which.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is nil while the connection is up, and afterwards the reason it ended: an *Error
// of kind ErrConnLost, or ErrClosed after Close.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// end records the first reason and tears the connection down; sessions blocked in
// Wait then return.
func (c *Client) end(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
		c.ssh.Close()
	})
}

// Close ends the connection and every session on it. Remote commands that ignore their
// stdin and stdout may survive it (sshd does not kill them).
func (c *Client) Close() error {
	c.end(ErrClosed)
	if errors.Is(c.err, ErrClosed) {
		return nil
	}
	return c.err
}

// keepalive sends OpenSSH's keepalive request every interval. The server answers
// (with "failure", as it does not know the request) while the link is alive. No answer
// within timeout means the link or the host is dead: TCP alone would keep retrying
// for many minutes, and Session.Wait would block all that time.
func (c *Client) keepalive(interval, timeout time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.ssh.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		timer := time.NewTimer(timeout)
		select {
		case err := <-reply:
			timer.Stop()
			if err != nil {
				c.end(&Error{Op: "keepalive", Target: c.target.String(), Kind: ErrConnLost, Err: err})
				return
			}
		case <-timer.C:
			c.end(&Error{Op: "keepalive", Target: c.target.String(), Kind: ErrConnLost,
				Err: fmt.Errorf("no reply to keepalive within %v", timeout)})
			return
		case <-c.done:
			timer.Stop()
			return
		}
	}
}

package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	xssh "golang.org/x/crypto/ssh"
)

// Dialer connects to hosts. It is safe for concurrent use; all its dials share one cap
// of Options.MaxInFlight attempts in flight.
type Dialer struct {
	opts Options
	cfg  *sshConfig
	ids  *identities
	sem  chan struct{}

	mu   sync.Mutex
	keys map[string]*hostKeys // by the joined list of known_hosts files
}

// NewDialer reads the ssh config and prepares the identities. An explicit
// Options.Identity that cannot be loaded is an error here, before any host is touched.
func NewDialer(opts Options) (*Dialer, error) {
	opts = opts.withDefaults()
	// "--ssh-identity=~/k" reaches us unexpanded (the shell expands only a word-initial ~)
	opts.Identity = expandTilde(opts.Identity)
	opts.KnownHostsFile = expandTilde(opts.KnownHostsFile)
	opts.ConfigFile = expandTilde(opts.ConfigFile)
	cfg, err := loadSSHConfig(opts.ConfigFile)
	if err != nil {
		return nil, err
	}
	d := &Dialer{opts: opts, cfg: cfg, ids: newIdentities(opts.Logger),
		sem: make(chan struct{}, opts.MaxInFlight), keys: map[string]*hostKeys{}}
	if opts.Identity != "" {
		if _, err := d.ids.load(opts.Identity); err != nil {
			d.ids.close()
			return nil, err
		}
	}
	return d, nil
}

// Close releases the ssh-agent connection. Clients already dialled stay open.
func (d *Dialer) Close() error {
	d.ids.close()
	return nil
}

// Resolve says where host ("[user@]name[:port]") would be dialled and as whom.
func (d *Dialer) Resolve(host string) (Target, error) {
	t, err := d.cfg.resolve(host, d.opts)
	if err != nil {
		return Target{}, fmt.Errorf("ssh: host %q: %w", host, err)
	}
	return t, nil
}

func (d *Dialer) hostKeysFor(t Target) (*hostKeys, error) {
	key := strings.Join(t.KnownHosts, "\x00")
	d.mu.Lock()
	defer d.mu.Unlock()
	if h, ok := d.keys[key]; ok {
		return h, nil
	}
	h, err := newHostKeys(t.KnownHosts, d.opts.AcceptNew, d.opts.Logger)
	if err != nil {
		return nil, err
	}
	d.keys[key] = h
	return h, nil
}

// DialAll connects to every host in parallel (at most MaxInFlight at a time) and
// returns the clients in the order of hosts. When some fail, the error joins one
// *Error per failed host and the slice holds nil for them; the caller owns, and must
// Close, the clients that did connect.
func (d *Dialer) DialAll(ctx context.Context, hosts []string) ([]*Client, error) {
	clients := make([]*Client, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() { clients[i], errs[i] = d.Dial(ctx, h) })
	}
	wg.Wait()
	return clients, errors.Join(errs...)
}

// Dial connects and authenticates to host ("[user@]name[:port]", name possibly an
// alias of the ssh config). Refused or reset connections are retried with backoff;
// host key and authentication failures are not.
func (d *Dialer) Dial(ctx context.Context, host string) (*Client, error) {
	t, err := d.Resolve(host)
	if err != nil {
		return nil, err
	}
	ids, err := d.ids.forTarget(d.opts.Identity, t)
	if err != nil {
		return nil, &Error{Op: "dial", Target: t.String(), Kind: ErrAuth, Err: err}
	}
	hk, err := d.hostKeysFor(t)
	if err != nil {
		return nil, &Error{Op: "dial", Target: t.String(), Kind: ErrHostKeyUnknown, Err: err}
	}
	select {
	case d.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, &Error{Op: "dial", Target: t.String(), Kind: ErrUnreachable, Err: ctx.Err()}
	}
	defer func() { <-d.sem }()

	backoff := firstBackoff
	for attempt := 0; ; attempt++ {
		c, err := d.dialOnce(ctx, t, ids, hk)
		if err == nil {
			return c, nil
		}
		if !retryable(err) || attempt >= d.opts.Retries || ctx.Err() != nil {
			if attempt > 0 {
				var e *Error
				if errors.As(err, &e) {
					e.Err = fmt.Errorf("%w (after %d attempts)", e.Err, attempt+1)
				}
			}
			return nil, err
		}
		d.opts.Logger.Debug("ssh dial: retrying", "host", t.String(), "attempt", attempt+1, "backoff", backoff, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, err
		}
		backoff *= 2
	}
}

// retryable: the server was not listening yet (refused) or shed the connection during
// the handshake (sshd's MaxStartups closes it before the version exchange).
func retryable(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Kind {
	case ErrUnreachable:
		return errors.Is(err, syscall.ECONNREFUSED)
	case ErrHandshake:
		return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
	}
	return false
}

func (d *Dialer) dialOnce(ctx context.Context, t Target, ids []identity, hk *hostKeys) (*Client, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.ConnectTimeout)
	defer cancel()
	nd := net.Dialer{KeepAlive: -1} // SSH keepalives below; TCP's would take minutes
	conn, err := nd.DialContext(ctx, "tcp", t.Addr())
	if err != nil {
		return nil, &Error{Op: "dial", Target: t.String(), Kind: ErrUnreachable, Err: err}
	}
	// The handshake has no context: a deadline bounds it, and cancellation closes it.
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.Close() })

	var hostKeyErr error
	signers := make([]xssh.Signer, len(ids))
	for i, id := range ids {
		signers[i] = id.signer
	}
	cfg := &xssh.ClientConfig{
		User:              t.User,
		Auth:              []xssh.AuthMethod{xssh.PublicKeys(signers...)},
		HostKeyCallback:   hk.callback(t, &hostKeyErr),
		HostKeyAlgorithms: hk.algorithms(t.hostKeyAddr()),
		ClientVersion:     "SSH-2.0-hcclrun",
	}
	sc, chans, reqs, err := xssh.NewClientConn(conn, t.Addr(), cfg)
	if !stop() && err == nil {
		sc.Close()
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, d.handshakeError(t, ids, hostKeyErr, err, ctx)
	}
	conn.SetDeadline(time.Time{})
	return newClient(t, xssh.NewClient(sc, chans, reqs), d.opts), nil
}

func (d *Dialer) handshakeError(t Target, ids []identity, hostKeyErr, err error, ctx context.Context) error {
	switch {
	case hostKeyErr != nil:
		return hostKeyErr
	case strings.Contains(err.Error(), "unable to authenticate"),
		strings.Contains(strings.ToLower(err.Error()), "too many authentication failures"):
		return &Error{Op: "dial", Target: t.String(), Kind: ErrAuth,
			Err:  fmt.Errorf("the server refused user %q with every key offered: %s", t.User, describe(ids)),
			Hint: "check the user (--ssh-user, user@host, or User in the ssh config) and that the key is in that user's authorized_keys on the host (--ssh-identity to use another key)"}
	case ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
		return &Error{Op: "dial", Target: t.String(), Kind: ErrUnreachable, Err: fmt.Errorf("no ssh handshake within %v: %w", d.opts.ConnectTimeout, err)}
	default:
		return &Error{Op: "dial", Target: t.String(), Kind: ErrHandshake, Err: err}
	}
}

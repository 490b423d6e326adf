package ssh

import (
	"errors"
	"strings"
)

// Kinds of failure. Every error of this package that concerns a host is an *Error whose
// Kind is one of these, so callers test with errors.Is(err, ErrAuth) and map them to
// messages or exit codes.
var (
	// ErrUnreachable: no TCP connection (refused after the retries, no route, timeout).
	ErrUnreachable = errors.New("host unreachable")
	// ErrHostKeyUnknown: known_hosts has no key for the host (and AcceptNew is off).
	ErrHostKeyUnknown = errors.New("host key unknown")
	// ErrHostKeyChanged: known_hosts has a different key for the host, or the key is
	// revoked. Possibly an attack; never accepted automatically.
	ErrHostKeyChanged = errors.New("host key changed")
	// ErrAuth: the server refused every key for the user. SSH does not say whether the
	// user or the key was wrong (it must not), so both give this.
	ErrAuth = errors.New("authentication failed")
	// ErrHandshake: the SSH handshake failed for another reason (no common algorithm,
	// connection dropped by MaxStartups, not an SSH server).
	ErrHandshake = errors.New("ssh handshake failed")
	// ErrConnLost: an open connection died (keepalive unanswered, EOF, reset).
	ErrConnLost = errors.New("connection lost")
	// ErrClosed: the Client was closed by its owner.
	ErrClosed = errors.New("client closed")
)

// Error is a failure concerning one host.
type Error struct {
	Op     string // "dial", "session", "wait", "keepalive"
	Target string // user@host:port (see Target.String)
	Kind   error  // one of the Err* kinds above
	Err    error  // the underlying cause, may be nil
	Hint   string // what the user can do about it, may be empty
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("ssh ")
	b.WriteString(e.Op)
	b.WriteString(" ")
	b.WriteString(e.Target)
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// Unwrap returns both the kind and the cause, so errors.Is matches either.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

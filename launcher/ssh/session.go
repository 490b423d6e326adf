package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	xssh "golang.org/x/crypto/ssh"
)

// EnvMode says how Command.Env reaches the remote command.
type EnvMode int

const (
	// EnvRequest, the default, sends each variable with an "env" request (sshd's
	// AcceptEnv must match the name; Debian's default accepts only LANG LC_*). A
	// variable the server refuses fails Start, naming it: it never falls back to
	// the command line, which every user of the remote host can read in `ps`.
	EnvRequest EnvMode = iota
	// EnvInline puts every variable on the command line: no round trips, but
	// visible in the remote `ps`, so never for a secret.
	EnvInline
)

// Command is what to run on the remote host.
type Command struct {
	// Args is the argument vector, quoted for the remote POSIX shell (see Quote).
	// To run a shell snippet, use {"sh", "-c", snippet}.
	Args []string
	// Env holds "NAME=value" entries added to the remote environment.
	Env     []string
	EnvMode EnvMode
	// Stdout and Stderr, if set, receive the output, and Wait returns only once all
	// of it is written. If nil, read Session.Stdout and Session.Stderr instead; then
	// read both, or a full one stalls the command.
	Stdout, Stderr io.Writer
}

// Session is one running remote command. Wait and Close may be called from another
// goroutine than the one reading the output.
type Session struct {
	// Stdin is the command's standard input; closing it sends EOF.
	Stdin io.WriteCloser
	// Stdout and Stderr are the command's output streams when the Command had no
	// writers for them, else nil.
	Stdout, Stderr io.Reader
	// Inlined lists the names of variables that went on the command line: all of
	// them with EnvInline, none otherwise.
	Inlined []string

	client *Client
	s      *xssh.Session
}

// ExitStatus is how a remote command ended.
type ExitStatus struct {
	Code   int    // exit code; for a signal death 128+signal number, as the shell reports it
	Signal string // the signal that killed it without "SIG", e.g. "TERM"; "" if it exited
	Msg    string // the server's message with a signal, usually empty
}

// Success reports exit code 0.
func (e ExitStatus) Success() bool { return e.Code == 0 && e.Signal == "" }

func (e ExitStatus) String() string {
	if e.Signal != "" {
		return "killed by signal " + e.Signal
	}
	return "exit status " + strconv.Itoa(e.Code)
}

// Start opens a session on c and starts cmd. ctx bounds only the start (channel open,
// env requests, exec), not the command's run: end that with Close.
func (c *Client) Start(ctx context.Context, cmd Command) (*Session, error) {
	if len(cmd.Args) == 0 {
		return nil, fmt.Errorf("ssh %s: empty command", c.target)
	}
	for _, kv := range cmd.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("ssh %s: environment entry %q is not NAME=value", c.target, kv)
		}
	}
	type result struct {
		s   *Session
		err error
	}
	ch := make(chan result, 1)
	go func() {
		s, err := c.start(cmd)
		ch <- result{s, err}
	}()
	select {
	case r := <-ch:
		return r.s, r.err
	case <-ctx.Done():
		go func() { // close what the start produces when it finally returns
			if r := <-ch; r.s != nil {
				r.s.Close()
			}
		}()
		return nil, fmt.Errorf("ssh %s: starting %s: %w", c.target, cmd.Args[0], ctx.Err())
	case <-c.done:
		return nil, c.err
	}
}

func (c *Client) start(cmd Command) (*Session, error) {
	fail := func(err error) error {
		if cerr := c.Err(); cerr != nil {
			return cerr
		}
		return &Error{Op: "session", Target: c.target.String(), Kind: ErrConnLost, Err: err}
	}
	xs, err := c.ssh.NewSession()
	if err != nil {
		return nil, fail(err)
	}
	s := &Session{client: c, s: xs}
	var inline []string
	for _, kv := range cmd.Env {
		k, v, _ := strings.Cut(kv, "=")
		if cmd.EnvMode == EnvInline {
			inline = append(inline, kv)
			s.Inlined = append(s.Inlined, k)
			continue
		}
		if err := xs.Setenv(k, v); err != nil {
			xs.Close()
			if c.Err() == nil {
				return nil, fmt.Errorf("ssh %s: sshd refused variable %s (add it to AcceptEnv in sshd_config): %w", c.target, k, err)
			}
			return nil, fail(err)
		}
	}
	line := QuoteCommand(cmd.Args)
	if len(inline) > 0 {
		line = "env " + QuoteCommand(inline) + " " + line
	}
	if s.Stdin, err = xs.StdinPipe(); err != nil {
		xs.Close()
		return nil, fail(err)
	}
	if cmd.Stdout != nil {
		xs.Stdout = cmd.Stdout
	} else if s.Stdout, err = xs.StdoutPipe(); err != nil {
		xs.Close()
		return nil, fail(err)
	}
	if cmd.Stderr != nil {
		xs.Stderr = cmd.Stderr
	} else if s.Stderr, err = xs.StderrPipe(); err != nil {
		xs.Close()
		return nil, fail(err)
	}
	if err := xs.Start(line); err != nil {
		xs.Close()
		return nil, fail(err)
	}
	return s, nil
}

// Wait waits for the command to end and returns how it ended. The error is non-nil
// only when that is unknown: the connection died first (an *Error of kind
// ErrConnLost, or ErrClosed), or the session was closed.
func (s *Session) Wait() (ExitStatus, error) {
	err := s.s.Wait()
	var ee *xssh.ExitError
	switch {
	case err == nil:
		return ExitStatus{}, nil
	case errors.As(err, &ee):
		return ExitStatus{Code: ee.ExitStatus(), Signal: ee.Signal(), Msg: ee.Msg()}, nil
	}
	if cerr := s.client.Err(); cerr != nil {
		return ExitStatus{}, cerr
	}
	return ExitStatus{}, &Error{Op: "wait", Target: s.client.target.String(), Kind: ErrConnLost, Err: err}
}

// Signal asks sshd to send sig to the command. OpenSSH ignores it for root logins
// ("session signalling requires privilege separation") and returns no error.
func (s *Session) Signal(sig xssh.Signal) error { return s.s.Signal(sig) }

// Close closes the session channel. The remote command gets EOF on stdin and SIGPIPE
// when it next writes; one that does neither keeps running.
func (s *Session) Close() error {
	err := s.s.Close()
	if errors.Is(err, io.EOF) { // already closed by the server after exit
		return nil
	}
	return err
}

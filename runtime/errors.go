package runtime

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrMismatch: ranks called different collectives, or the same one with
	// different counts, types, operators, roots or per-peer counts.
	ErrMismatch = errors.New("mismatched collective calls")
	// ErrAborted: the job was aborted (a peer failed, was lost, or a rank
	// called for an abort); the communicator cannot be used any more.
	ErrAborted = errors.New("job aborted")
	// ErrInvalidArgument: the call's arguments are invalid on this rank.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrClosed: the communicator was closed.
	ErrClosed = errors.New("communicator closed")
	// ErrTimeout: the call exceeded HCCL_EXEC_TIMEOUT or Init exceeded
	// HCCL_CONNECT_TIMEOUT.
	ErrTimeout = errors.New("timed out")
)

// OpError is the error of every collective and of Init. It names the
// collective (or "Init"), the algorithm, the rank, the peer involved and the
// step of the plan where it failed, when known (-1 otherwise).
type OpError struct {
	Op   string // "AllReduce", "Init", ...
	Algo string // "ring", ... ("" before an algorithm was chosen)
	Rank int    // -1 when not known yet (Init failed before reading it)
	Peer int    // -1 when no single peer is involved
	Step int    // -1 when not inside a plan
	Err  error
}

func (e *OpError) Error() string {
	var b strings.Builder
	b.WriteString("hccl: ")
	b.WriteString(e.Op)
	if e.Algo != "" {
		b.WriteString("/")
		b.WriteString(e.Algo)
	}
	if e.Rank >= 0 {
		fmt.Fprintf(&b, " rank %d", e.Rank)
	}
	if e.Peer >= 0 {
		fmt.Fprintf(&b, " peer %d", e.Peer)
	}
	if e.Step >= 0 {
		fmt.Fprintf(&b, " step %d", e.Step)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *OpError) Unwrap() error { return e.Err }

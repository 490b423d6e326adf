package shm

import "errors"

// Errors returned by ring operations. They are wrapped with context by the
// caller (which knows the ranks); test them with errors.Is.
var (
	// ErrClosed: this process closed the ring.
	ErrClosed = errors.New("shm: ring closed")
	// ErrPeerClosed: the other side closed the ring, and nothing is left
	// to read.
	ErrPeerClosed = errors.New("shm: ring closed by peer")
	// ErrPeerGone: the liveness channel to the other side failed (the
	// peer exited or was killed), and nothing is left to read. The error
	// wraps the cause as well.
	ErrPeerGone = errors.New("shm: peer gone")
)

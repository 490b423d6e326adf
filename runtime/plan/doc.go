// Package plan holds the data a collective algorithm produces and the
// executor consumes: per-rank ordered steps of concurrent operations over
// element regions of the send, receive and scratch buffers.
//
// Plans are pure data. The package also holds Simulate, a single-threaded
// in-memory network that runs every rank's plan together and proves that
// every receive has its send, that no rank waits forever, that the step
// constraints hold and that no region leaves its buffer. Algorithms are
// tested through it; nothing here does I/O.
package plan

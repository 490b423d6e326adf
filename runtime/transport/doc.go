// Package transport defines the link between two ranks that the executor
// moves frames over, and the connection manager that opens links to peers.
// Implementations live in sub-packages, one per medium (tcp, shm); the first
// whose CanConnect accepts a peer wins, as in NCCL's transport list.
package transport

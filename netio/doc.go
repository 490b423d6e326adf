// Package netio is hcclrun's TCP layer: the per-job key, the mutual
// challenge-response handshake every connection starts with, dialling and
// listening with that handshake built in, socket tuning for the data path,
// the choice of network interface (HCCL_SOCKET_IFNAME), and the header of
// data frames.
//
// netio is a leaf: it imports only the standard library, golang.org/x/sys,
// vishvananda/netlink and internal/ratelog. It knows nothing of
// collectives; the numbers in a frame header are given meaning by the
// runtime.
//
// # Authentication
//
// Every connection, control or data, TCP or unix socket, begins with
// [Handshake]. Both sides prove knowledge of the job key with HMAC-SHA256
// over two fresh nonces, a role label and both identities ([Hello]), so a
// recorded transcript cannot be replayed, a MAC cannot be reflected back
// at its author, and the accepting side learns which rank dialled. Nothing
// in the handshake is encrypted: the key keeps strangers (other jobs, port
// scanners, stale ranks of a previous run) out, it does not hide data.
package netio

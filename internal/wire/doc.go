// Package wire defines the bytes hcclrun's peers exchange, whatever carries
// them: the per-job key, the mutual challenge-response handshake every
// connection starts with (control or data, TCP or unix socket), and the
// header of data frames with the call descriptor that lets a receiver
// detect a mismatched call. Both transports and the control plane import
// it; it imports only the standard library.
//
// # Authentication
//
// Both sides prove knowledge of the job key with HMAC-SHA256 over two
// fresh nonces, a role label and both identities ([Hello]), so a recorded
// transcript cannot be replayed, a MAC cannot be reflected back at its
// author, and the accepting side learns which rank dialled. Nothing in the
// handshake is encrypted: the key keeps strangers (other jobs, port
// scanners, stale ranks of a previous run) out, it does not hide data.
package wire

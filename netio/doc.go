// Package netio is hcclrun's TCP layer: dialling and listening with the
// job's authenticated handshake (internal/wire) built in, socket tuning for
// the data path (buffers, keepalive, congestion control), and the choice of
// network interface (HCCL_SOCKET_IFNAME).
//
// netio imports only the standard library, golang.org/x/sys,
// vishvananda/netlink and the module's internal leaves (wire, ratelog). It
// knows nothing of collectives; the bytes that cross its connections are
// defined by package wire and given meaning by the runtime. The
// shared-memory transport does not import it: it speaks the same wire
// handshake over its unix sockets.
//
// # Authentication
//
// Every connection a Listener accepts and every connection Dial opens
// begins with wire.Handshake; a peer that fails it is dropped (and logged,
// rate-limited) without disturbing the job, and a flood of half-open
// connections evicts the oldest rather than stalling the accept loop.
package netio

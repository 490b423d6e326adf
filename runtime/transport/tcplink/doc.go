// Package tcplink implements transport.Link over one authenticated TCP
// connection (see netio), for peers on other servers or when shared memory
// is disabled.
//
// [Transport] is the last entry of the runtime's table of transports
// (transport.Transport): it can connect any two ranks, listens and dials
// with netio, drops the authenticated connections that are not data links,
// and makes its links as a [Config] says: how long a socket that is not
// ready is retried before the link parks (Spin), the socket options of the
// data connections (Socket: the congestion control, CheckCongestion), and
// the [Group] of links whose reads write each other's started sends, one
// per communicator. Nothing in the package is global to the process.
//
// Send writes the 48-byte frame header and the payload with one writev;
// receives go through a buffered reader, so small frames cost one read
// system call for several frames while large payloads are read straight
// into the destination. Reads and writes that find the socket not ready
// spin for a while before they park on Go's network poller (poll.go).
//
// The executor starts its sends (transport.AsyncSender, async.go): the
// socket takes what its buffer holds, and the rest is written by the
// reads of the link's group while they spin on their own sockets, by a
// goroutine of the link once a read parks, or by WaitPosted at the end of
// the step. A ring step's send and receive thus run on one goroutine, as
// one thread progresses both in Open MPI's TCP transport.
package tcplink

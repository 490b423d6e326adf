// Package tcplink implements transport.Link over one authenticated TCP
// connection (see netio), for peers on other servers or when shared memory
// is disabled.
//
// Send writes the 48-byte frame header and the payload with one writev;
// receives go through a buffered reader, so small frames cost one read
// system call for several frames while large payloads are read straight
// into the destination.
package tcplink

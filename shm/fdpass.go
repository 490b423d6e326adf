package shm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Send passes the segment's descriptor to the process at the other end of
// conn, together with msg (at least one byte: a stream socket carries
// ancillary data only with data). The receiver calls Receive with a buffer
// of len(msg) bytes. Deadlines are the caller's, set on conn.
func (s *Segment) Send(conn *net.UnixConn, msg []byte) error {
	if len(msg) == 0 {
		return errors.New("shm: send segment: msg must not be empty")
	}
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f == nil {
		return errors.New("shm: send segment: no descriptor (closed, or a received segment)")
	}
	n, _, err := conn.WriteMsgUnix(msg, unix.UnixRights(int(f.Fd())), nil)
	if err != nil {
		return fmt.Errorf("shm: send segment descriptor: %w", err)
	}
	if n < len(msg) {
		if _, err := conn.Write(msg[n:]); err != nil {
			return fmt.Errorf("shm: send segment message: %w", err)
		}
	}
	return nil
}

// Receive reads exactly len(msg) bytes from conn, of which the first carries
// a segment descriptor passed with Send, and maps that segment.
func Receive(conn *net.UnixConn, msg []byte) (*Segment, error) {
	if len(msg) == 0 {
		return nil, errors.New("shm: receive segment: msg must not be empty")
	}
	oob := make([]byte, unix.CmsgSpace(4*4)) // room for a few stray descriptors
	n, oobn, flags, _, err := conn.ReadMsgUnix(msg, oob)
	if err != nil {
		return nil, fmt.Errorf("shm: receive segment descriptor: %w", err)
	}
	fds, perr := parseRights(oob[:oobn])
	if perr == nil && flags&unix.MSG_CTRUNC != 0 {
		perr = errors.New("shm: receive segment: ancillary data truncated")
	}
	if perr == nil && len(fds) != 1 {
		perr = fmt.Errorf("shm: receive segment: got %d descriptors, want 1", len(fds))
	}
	if perr != nil {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, perr
	}
	f := os.NewFile(uintptr(fds[0]), "shm-segment")
	if n < len(msg) {
		if _, err := io.ReadFull(conn, msg[n:]); err != nil {
			f.Close()
			return nil, fmt.Errorf("shm: receive segment message: %w", err)
		}
	}
	return Map(f)
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("shm: parse ancillary data: %w", err)
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			continue // not SCM_RIGHTS
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

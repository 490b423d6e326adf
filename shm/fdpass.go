package shm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// maxExtraFDs bounds the descriptors Send passes besides the segment's.
const maxExtraFDs = 3

// Send passes the segment's descriptor to the process at the other end of
// conn, together with msg (at least one byte: a stream socket carries
// ancillary data only with data) and up to three extra descriptors of the
// caller's (shmlink passes pipe ends this way), which stay open here. The
// receiver calls Receive with a buffer of len(msg) bytes. Deadlines are the
// caller's, set on conn.
func (s *Segment) Send(conn *net.UnixConn, msg []byte, extra ...int) error {
	if len(msg) == 0 {
		return errors.New("shm: send segment: msg must not be empty")
	}
	if len(extra) > maxExtraFDs {
		return fmt.Errorf("shm: send segment: %d extra descriptors, at most %d", len(extra), maxExtraFDs)
	}
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	if f == nil {
		return errors.New("shm: send segment: no descriptor (closed, or a received segment)")
	}
	n, _, err := conn.WriteMsgUnix(msg, unix.UnixRights(append([]int{int(f.Fd())}, extra...)...), nil)
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
// a segment descriptor passed with Send, and maps that segment, lazily
// (Options.Lazy): the caller, which reads in msg how the sender meant the
// segment to be used, calls ReadAhead if its pages should be read ahead. The extra
// descriptors Send passed come back in extra, in order; they are the
// caller's to close (Receive closes them itself only when it fails).
func Receive(conn *net.UnixConn, msg []byte) (seg *Segment, extra []int, err error) {
	if len(msg) == 0 {
		return nil, nil, errors.New("shm: receive segment: msg must not be empty")
	}
	oob := make([]byte, unix.CmsgSpace(4*(1+maxExtraFDs+2))) // and room for a few stray descriptors
	n, oobn, flags, _, err := conn.ReadMsgUnix(msg, oob)
	if err != nil {
		return nil, nil, fmt.Errorf("shm: receive segment descriptor: %w", err)
	}
	fds, perr := parseRights(oob[:oobn])
	if perr == nil && flags&unix.MSG_CTRUNC != 0 {
		perr = errors.New("shm: receive segment: ancillary data truncated")
	}
	if perr == nil && (len(fds) == 0 || len(fds) > 1+maxExtraFDs) {
		perr = fmt.Errorf("shm: receive segment: got %d descriptors, want 1 to %d", len(fds), 1+maxExtraFDs)
	}
	if perr != nil {
		closeFDs(fds)
		return nil, nil, perr
	}
	if n < len(msg) {
		if _, err := io.ReadFull(conn, msg[n:]); err != nil {
			closeFDs(fds)
			return nil, nil, fmt.Errorf("shm: receive segment message: %w", err)
		}
	}
	seg, err = mapFile(os.NewFile(uintptr(fds[0]), "shm-segment"), true) // closes fds[0]
	if err != nil {
		closeFDs(fds[1:])
		return nil, nil, err
	}
	return seg, fds[1:], nil
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
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

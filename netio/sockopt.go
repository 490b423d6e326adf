package netio

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SocketOptions are the per-connection settings the data path cares about.
// Zero fields leave the kernel's (or Go's) default alone.
type SocketOptions struct {
	// ReadBuffer and WriteBuffer are SO_RCVBUF and SO_SNDBUF in bytes.
	// Linux doubles the value for its bookkeeping and caps it at
	// net.core.rmem_max / wmem_max (4 MiB on the test machines); setting
	// one also turns off the kernel's autotuning for that direction.
	// Tests set them tiny to prove that no plan relies on buffering.
	ReadBuffer, WriteBuffer int
	// KeepAlive: > 0 turns TCP keepalive on with that idle time and
	// interval; < 0 turns it off. Data links are watched by the control
	// plane, so they normally turn it off; Go's default is on at 15 s.
	KeepAlive time.Duration
	// Congestion names the TCP congestion control (TCP_CONGESTION), ""
	// for the kernel's default. Linux lets any process choose among
	// net.ipv4.tcp_allowed_congestion_control (reno and cubic at least).
	Congestion string
}

// Tune applies o to c, which must be a *net.TCPConn or a *net.UnixConn
// (KeepAlive only applies to TCP and is ignored on unix sockets). It also
// sets TCP_NODELAY, which Dial and Listener already do.
func Tune(c net.Conn, o SocketOptions) error {
	type buffered interface {
		SetReadBuffer(int) error
		SetWriteBuffer(int) error
	}
	b, ok := c.(buffered)
	if !ok {
		return fmt.Errorf("netio: tune %T: not a TCP or unix connection", c)
	}
	if o.ReadBuffer > 0 {
		if err := b.SetReadBuffer(o.ReadBuffer); err != nil {
			return fmt.Errorf("netio: tune %v: read buffer %d: %w", c.RemoteAddr(), o.ReadBuffer, err)
		}
	}
	if o.WriteBuffer > 0 {
		if err := b.SetWriteBuffer(o.WriteBuffer); err != nil {
			return fmt.Errorf("netio: tune %v: write buffer %d: %w", c.RemoteAddr(), o.WriteBuffer, err)
		}
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	if err := tc.SetNoDelay(true); err != nil {
		return fmt.Errorf("netio: tune %v: nodelay: %w", c.RemoteAddr(), err)
	}
	if o.Congestion != "" {
		if err := setCongestion(tc, o.Congestion); err != nil {
			return fmt.Errorf("netio: tune %v: congestion control %q: %w", c.RemoteAddr(), o.Congestion, err)
		}
	}
	switch {
	case o.KeepAlive > 0:
		err := tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: o.KeepAlive, Interval: o.KeepAlive, Count: 3})
		if err != nil {
			return fmt.Errorf("netio: tune %v: keepalive: %w", c.RemoteAddr(), err)
		}
	case o.KeepAlive < 0:
		if err := tc.SetKeepAlive(false); err != nil {
			return fmt.Errorf("netio: tune %v: keepalive off: %w", c.RemoteAddr(), err)
		}
	}
	return nil
}

// SocketBuffers reports the kernel's SO_RCVBUF and SO_SNDBUF of c in bytes
// (on Linux, twice what was asked for), so that tests and logs can show
// what a link really got.
func SocketBuffers(c net.Conn) (read, write int, err error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, 0, fmt.Errorf("netio: socket buffers of %T: not a socket", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, fmt.Errorf("netio: socket buffers: %w", err)
	}
	var serr error
	cerr := raw.Control(func(fd uintptr) {
		read, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		if serr == nil {
			write, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
		}
	})
	if cerr != nil {
		return 0, 0, fmt.Errorf("netio: socket buffers: %w", cerr)
	}
	if serr != nil {
		return 0, 0, fmt.Errorf("netio: socket buffers: getsockopt: %w", serr)
	}
	return read, write, nil
}

// KeepAliveEnabled reports whether SO_KEEPALIVE is set on c.
func KeepAliveEnabled(c net.Conn) (bool, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false, fmt.Errorf("netio: keepalive of %T: not a socket", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false, fmt.Errorf("netio: keepalive: %w", err)
	}
	var v int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		v, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE)
	}); err != nil {
		return false, fmt.Errorf("netio: keepalive: %w", err)
	}
	if serr != nil {
		return false, fmt.Errorf("netio: keepalive: getsockopt: %w", serr)
	}
	return v != 0, nil
}

// setCongestion sets c's TCP congestion control to name.
func setCongestion(c *net.TCPConn, name string) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = setCongestionFD(int(fd), name) }); err != nil {
		return err
	}
	return serr
}

func setCongestionFD(fd int, name string) error {
	return unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
}

// CheckCongestion reports whether the kernel lets this process give its
// TCP sockets the congestion control name, by setting it on a socket of
// its own: one not built, or not in net.ipv4.tcp_allowed_congestion_control
// for an unprivileged process, is refused.
func CheckCongestion(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return setCongestionFD(fd, name)
}

// Congestion reports c's TCP congestion control.
func Congestion(c net.Conn) (string, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return "", fmt.Errorf("netio: congestion of %T: not a TCP connection", c)
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return "", err
	}
	var name string
	var serr error
	if err := raw.Control(func(fd uintptr) {
		name, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return "", err
	}
	return strings.TrimRight(name, "\x00"), serr
}

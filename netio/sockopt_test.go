package netio

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestTune(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     SocketOptions
		bufWant int  // 0: not checked
		keep    bool // SO_KEEPALIVE afterwards
	}{
		{"tiny buffers keepalive off", SocketOptions{ReadBuffer: 4096, WriteBuffer: 4096, KeepAlive: -1}, 4096, false},
		{"large buffers keepalive on", SocketOptions{ReadBuffer: 1 << 20, WriteBuffer: 1 << 20, KeepAlive: time.Second}, 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tcpConn(t)
			if err := Tune(c, tc.opt); err != nil {
				t.Fatal(err)
			}
			r, w, err := SocketBuffers(c)
			if err != nil {
				t.Fatal(err)
			}
			// Linux reports twice the request (bookkeeping overhead).
			for _, got := range []int{r, w} {
				if got < tc.bufWant || got > 2*tc.bufWant {
					t.Errorf("buffer %d bytes, want between %d and %d", got, tc.bufWant, 2*tc.bufWant)
				}
			}
			on, err := KeepAliveEnabled(c)
			if err != nil {
				t.Fatal(err)
			}
			if on != tc.keep {
				t.Errorf("keepalive %v, want %v", on, tc.keep)
			}
		})
	}
	p, q := net.Pipe()
	defer p.Close()
	defer q.Close()
	if err := Tune(p, SocketOptions{ReadBuffer: 1}); err == nil {
		t.Error("Tune accepted a net.Pipe")
	}
}

// TestTuneCongestion: Tune sets the congestion control it is given (reno,
// which every Linux has, and cubic, the usual default), leaves it alone
// when given none, and names an unknown one in its error; CheckCongestion
// tells the two apart without a connection.
func TestTuneCongestion(t *testing.T) {
	c := tcpConn(t)
	before, err := Congestion(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := Tune(c, SocketOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := Congestion(c); got != before {
		t.Errorf("no congestion asked: %q, want the default %q", got, before)
	}
	for _, name := range []string{"reno", "cubic"} {
		if err := Tune(c, SocketOptions{Congestion: name}); err != nil {
			t.Fatal(err)
		}
		if got, _ := Congestion(c); got != name {
			t.Errorf("congestion %q, want %q", got, name)
		}
	}
	err = Tune(c, SocketOptions{Congestion: "no-such-algorithm"})
	if err == nil || !strings.Contains(err.Error(), `"no-such-algorithm"`) {
		t.Errorf("unknown congestion control: %v, want an error naming it", err)
	}
	if err := CheckCongestion("reno"); err != nil {
		t.Errorf("CheckCongestion(reno): %v", err)
	}
	if err := CheckCongestion("no-such-algorithm"); err == nil {
		t.Error("CheckCongestion accepted an unknown congestion control")
	}
}

// tcpConn returns the dialling end of a loopback TCP connection.
func tcpConn(t *testing.T) net.Conn {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c
}

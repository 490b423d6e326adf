package tcplink

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestPollConnWritev: writev delivers every byte of its buffers in order,
// empty ones included (writev(2) of nothing returns 0, which a loop that
// waits for progress would retry for ever), and Write of nothing returns.
func TestPollConnWritev(t *testing.T) {
	peer, raw := loopbackConns(t)
	c, ok := newPollConn(raw, 0, new(Group)).(*pollConn)
	if !ok {
		t.Fatal("a TCP connection was not wrapped")
	}
	done := make(chan error, 1)
	go func() {
		if _, err := c.Write(nil); err != nil {
			done <- err
			return
		}
		n, err := c.writev([][]byte{{}, []byte("head"), {}, {}, bytes.Repeat([]byte{7}, 1<<20), {}})
		if err == nil && n != 4+1<<20 {
			t.Errorf("writev wrote %d bytes", n)
		}
		done <- err
	}()
	got := make([]byte, 4+1<<20)
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(peer, got); err != nil {
		t.Fatal(err)
	}
	if string(got[:4]) != "head" || !bytes.Equal(got[4:], bytes.Repeat([]byte{7}, 1<<20)) {
		t.Fatal("bytes out of order or wrong")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("writev did not return")
	}
}

// loopbackConns returns the two ends of a loopback TCP connection, closed
// when the test ends.
func loopbackConns(t *testing.T) (accepted, dialed net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	dialed, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialed.Close() })
	accepted = <-ch
	if accepted == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { accepted.Close() })
	return accepted, dialed
}

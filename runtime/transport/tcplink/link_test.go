package tcplink_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/linktest"
	"github.com/hcclrun/hcclrun/runtime/transport/tcplink"
)

// tcpPair connects two links over loopback through netio's authenticated
// listener and dialer, as the runtime does.
func tcpPair() linktest.NewPair {
	return func(t *testing.T) (transport.Link, transport.Link) {
		t.Helper()
		key, err := wire.NewKey()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := netio.Listen("127.0.0.1:0", key, wire.Hello{Purpose: wire.PurposeData, Rank: 0}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		type accepted struct {
			conn net.Conn
			err  error
		}
		ch := make(chan accepted, 1)
		go func() {
			c, _, err := ln.Accept()
			ch <- accepted{c, err}
		}()
		dc, _, err := netio.Dial(ctx, ln.Addr().String(), key, wire.Hello{Purpose: wire.PurposeData, Rank: 1})
		if err != nil {
			t.Fatal(err)
		}
		acc := <-ch
		if acc.err != nil {
			t.Fatal(acc.err)
		}
		a, b := tcplink.New(acc.conn, 1), tcplink.New(dc, 0)
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}
}

func TestConformance(t *testing.T) {
	linktest.Run(t, tcpPair())
}

// TestConformanceSpinning runs the suite again with the reads and writes
// retrying a socket that is not ready for 200 us before they park, as a
// rank with a core of its own does (poll.go).
func TestConformanceSpinning(t *testing.T) {
	tcplink.SetSpin(200 * time.Microsecond)
	t.Cleanup(func() { tcplink.SetSpin(0) })
	linktest.Run(t, tcpPair())
}

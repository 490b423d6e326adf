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
// listener and dialer, as the runtime does, made as cfg says (each of a
// group of its own, as the links of two ranks).
func tcpPair(cfg tcplink.Config) linktest.NewPair {
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
		ca, cb := cfg, cfg
		ca.Group, cb.Group = new(tcplink.Group), new(tcplink.Group)
		a, b := ca.New(acc.conn, 1), cb.New(dc, 0)
		t.Cleanup(func() { a.Close(); b.Close() })
		return a, b
	}
}

func TestConformance(t *testing.T) {
	linktest.Run(t, tcpPair(tcplink.Config{}))
}

// TestConformanceSpinning runs the suite again with the reads and writes
// retrying a socket that is not ready for 200 us before they park, as a
// rank with a core of its own does (poll.go).
func TestConformanceSpinning(t *testing.T) {
	linktest.Run(t, tcpPair(tcplink.Config{Spin: 200 * time.Microsecond}))
}

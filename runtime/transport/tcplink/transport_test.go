package tcplink

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport/linktest"
)

// TestTransport: rank 1 dials rank 0's listener and both get the link, of
// one group per rank, with the congestion control of the config on both
// sockets; a connection that is not a data link (the launcher's) is
// dropped, never accepted; and a listener answering as another rank than
// the one dialled fails the dial.
func TestTransport(t *testing.T) {
	if err := netio.CheckCongestion("reno"); err != nil {
		t.Skipf("the kernel has no reno: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Spin: 50 * time.Microsecond, Socket: netio.SocketOptions{Congestion: "reno"}}
	t0 := NewTransport("127.0.0.1", 0, key, cfg, nil)
	t1 := NewTransport("127.0.0.1", 1, key, cfg, nil)
	if t0.Name() != "tcp" || !t0.CanConnect(topo.Facts{Host: topo.HostID{BootID: "a"}}, topo.Facts{Host: topo.HostID{BootID: "b"}}) {
		t.Fatalf("name %q, or ranks of two hosts refused", t0.Name())
	}
	ln, err := t0.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	launcher, _, err := netio.Dial(ctx, ln.Addr(), key, wire.Hello{Purpose: wire.PurposeData, Rank: wire.LauncherRank})
	if err != nil {
		t.Fatal(err)
	}
	defer launcher.Close()
	al, peer, d := linktest.Connect(ctx, t, ln, t1, 0, 0x1234_5678)
	if peer != 1 {
		t.Fatalf("accepted peer %d; want rank 1 (the launcher's connection dropped)", peer)
	}
	for _, l := range []*Link{al.(*Link), d.(*Link)} {
		if cc, err := netio.Congestion(l.poll.Conn); cc != "reno" || err != nil {
			t.Errorf("link to rank %d: congestion control %q, %v; want reno", l.peer, cc, err)
		}
		if l.poll.spin != cfg.Spin || l.group != t0.cfg.Group && l.group != t1.cfg.Group {
			t.Errorf("link to rank %d: spin %v, group %p; want %v and its transport's", l.peer, l.poll.spin, l.group, cfg.Spin)
		}
	}
	if t0.cfg.Group == t1.cfg.Group || t0.cfg.Group == nil {
		t.Error("the two ranks' transports share a group, or have none")
	}
	h := wire.Header{Seq: 1, Len: 5}
	if err := d.Send(ctx, &h, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	var got wire.Header
	p := make([]byte, 5)
	if err := al.RecvHeader(ctx, &got); err != nil || al.RecvPayload(ctx, p) != nil || got != h || !bytes.Equal(p, []byte("hello")) {
		t.Fatalf("frame %+v %q, %v", got, p, err)
	}

	go func() { ln.Accept() }() // takes the dial below; closed with ln
	if _, err := NewTransport("127.0.0.1", 2, key, Config{}, nil).Dial(ctx, 1, 0, ln.Addr()); err == nil || !strings.Contains(err.Error(), "answered by") {
		t.Errorf("dialled rank 1 at rank 0's listener: %v, want an error saying who answered", err)
	}
	ln.Close()
	if _, _, _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

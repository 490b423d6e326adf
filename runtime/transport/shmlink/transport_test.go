package shmlink

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/linktest"
	"github.com/hcclrun/hcclrun/shm"
)

// TestTransport: ranks of one host link through their transports, each
// side with the waits and the offers of shares its own configuration
// says; ranks of two hosts are not for it; and a socket name taken leaves
// the rank without the transport (transport.Unavailable) rather than
// failing it.
func TestTransport(t *testing.T) {
	ctx := testCtx(t, 20*time.Second)
	job, key := newJobID(), newKey(t)
	host := Host{Ranks: 2, CPUs: 2}
	spin := shm.WaitPolicy{Spin: time.Millisecond}
	t0 := NewTransport(DialConfig{JobID: job, Key: key, Self: 0}, ListenConfig{Wait: spin}, host, nil)
	t1 := NewTransport(DialConfig{JobID: job, Key: key, Self: 1, RingBytes: 64 << 10, NoShare: true}, ListenConfig{}, host, nil)
	here, there := topo.Facts{Host: topo.HostID{BootID: "a"}}, topo.Facts{Host: topo.HostID{BootID: "b"}}
	if t0.Name() != "shm" || !t0.CanConnect(here, here) || t0.CanConnect(here, there) {
		t.Fatalf("name %q; same host %v, two hosts %v", t0.Name(), t0.CanConnect(here, here), t0.CanConnect(here, there))
	}
	ln, err := t0.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	al, peer, d := linktest.Connect(ctx, t, ln, t1, 0, 0x1234_5678)
	if peer != 1 {
		t.Fatalf("accepted rank %d", peer)
	}
	la, ld := al.(*Link), d.(*Link)
	if la.RingBytes() != 64<<10 || !la.share || ld.share {
		t.Errorf("rings of %d bytes, shares %v (listener) and %v (dialer); want 64 KiB, the listener's only", la.RingBytes(), la.share, ld.share)
	}

	tag := randomTag()
	name, err := socketName(job, 2, tag)
	if err != nil {
		t.Fatal(err)
	}
	squat, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	_, err = NewTransport(DialConfig{JobID: job, Key: key, Self: 2}, ListenConfig{Tag: tag}, host, nil).Listen()
	var u *transport.Unavailable
	if !errors.As(err, &u) || !errors.Is(err, ErrNameTaken) || !strings.Contains(u.Reason, "socket name is taken") {
		t.Errorf("listen on a taken name: %v, want a transport.Unavailable wrapping ErrNameTaken", err)
	}
}

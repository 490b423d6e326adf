package linktest

import (
	"context"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/transport"
)

// Connect makes one link through a transport's own Listen and Dial: dialer
// dials rank peer, which listens on ln, with tag, and Connect returns the
// link ln accepted with the rank it proved, and the dialled link; it fails
// the test when the tag did not arrive. Both links close when the test
// ends.
func Connect(ctx context.Context, t *testing.T, ln transport.Listener, dialer transport.Transport, peer int, tag uint32) (accepted transport.Link, from int, dialed transport.Link) {
	t.Helper()
	type accept struct {
		l    transport.Link
		peer int
		tag  uint32
		err  error
	}
	acc := make(chan accept, 1)
	go func() {
		l, peer, tag, err := ln.Accept()
		acc <- accept{l, peer, tag, err}
	}()
	dialed, err := dialer.Dial(ctx, peer, tag, ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dialed.Close() })
	a := <-acc
	if a.err != nil {
		t.Fatalf("accept: %v", a.err)
	}
	t.Cleanup(func() { a.l.Close() })
	if a.tag != tag {
		t.Fatalf("accepted a link with tag %#x, dialled with %#x", a.tag, tag)
	}
	return a.l, a.peer, dialed
}

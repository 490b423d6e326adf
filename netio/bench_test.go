package netio

import (
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// BenchmarkDialHandshake measures a TCP connect plus the full handshake
// on loopback, as a rank pays it once per data link.
func BenchmarkDialHandshake(b *testing.B) {
	key, err := wire.NewKey()
	if err != nil {
		b.Fatal(err)
	}
	l, err := Listen("127.0.0.1:0", key, wire.Hello{Purpose: wire.PurposeData}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, _, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ctx := testCtxB(b, time.Minute)
	for b.Loop() {
		c, _, err := Dial(ctx, l.Addr().String(), key, wire.Hello{Purpose: wire.PurposeData, Rank: 1})
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

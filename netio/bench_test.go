package netio

import (
	"testing"
	"time"
)

// BenchmarkDialHandshake measures a TCP connect plus the full handshake
// on loopback, as a rank pays it once per data link.
func BenchmarkDialHandshake(b *testing.B) {
	key, err := NewKey()
	if err != nil {
		b.Fatal(err)
	}
	l, err := Listen("127.0.0.1:0", key, Hello{Purpose: PurposeData}, nil)
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
		c, _, err := Dial(ctx, l.Addr().String(), key, Hello{Purpose: PurposeData, Rank: 1})
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

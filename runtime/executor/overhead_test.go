package executor

import (
	"context"
	"testing"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// echoLink answers every frame sent on it with the same frame from the
// peer, at once: what is left of a call's time over it is the executor's.
type echoLink struct {
	peer    uint32
	h       wire.Header
	payload [256]byte
	n       int
}

func (l *echoLink) Send(_ context.Context, h *wire.Header, p []byte) error {
	l.h, l.n = *h, copy(l.payload[:], p)
	l.h.Src = l.peer
	return nil
}
func (l *echoLink) TrySend(ctx context.Context, h *wire.Header, p []byte) (bool, error) {
	return true, l.Send(ctx, h, p)
}
func (l *echoLink) RecvHeader(_ context.Context, h *wire.Header) error { *h = l.h; return nil }
func (l *echoLink) RecvPayload(_ context.Context, p []byte) error {
	copy(p, l.payload[:l.n])
	return nil
}
func (l *echoLink) VisitPayload(_ context.Context, n int, fn func(int, []byte)) error {
	fn(0, l.payload[:n])
	return nil
}
func (l *echoLink) Shut()        {}
func (l *echoLink) Close() error { return nil }

var _ transport.TrySender = (*echoLink)(nil)

// BenchmarkSmallAllReduce is the executor's own time for an 8-byte
// one-shot AllReduce at np 2, out of place and in place: over echoLink
// nothing waits, so what it measures is the work around the exchange
// (pair.go).
func BenchmarkSmallAllReduce(b *testing.B) {
	for _, inPlace := range []bool{false, true} {
		name := "outofplace"
		if inPlace {
			name = "inplace"
		}
		b.Run(name, func(b *testing.B) {
			p, err := algo.OneShot{}.Build(plan.Request{Coll: plan.AllReduce, Count: 2, Rank: 0, Size: 2, InPlace: inPlace})
			if err != nil {
				b.Fatal(err)
			}
			link := &echoLink{peer: 1}
			e := New(0, oneLink{link}, Config{})
			defer e.Close()
			send, recv := make([]byte, 8), make([]byte, 8)
			if inPlace {
				recv = send
			}
			call := Call{Desc: wire.Call{Coll: uint8(plan.AllReduce), Count: 2, Root: -1}, ElemSize: 4, Kernel: sumBytes}
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				call.Seq = uint64(i + 1)
				if err := e.Run(ctx, p, call, Buffers{Send: send, Recv: recv}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

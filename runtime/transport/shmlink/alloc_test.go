package shmlink

import (
	"context"
	"testing"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// TestSteadyStateAllocatesNothing: once a link is up, sending and
// receiving frames (by copy and in place, smaller and larger than the
// ring, with the waits that a full or empty ring brings) allocates
// nothing; only set-up does.
func TestSteadyStateAllocatesNothing(t *testing.T) {
	const ring = 16 << 10
	ctx := context.Background()
	for _, size := range []int{8, 4096, 64 << 10} {
		rx, tx := pair(t, ring)
		p, q := make([]byte, size), make([]byte, size)
		var sum byte
		visit := func(off int, b []byte) {
			for _, c := range b {
				sum += c
			}
		}
		var h, g wire.Header
		send := func() error {
			h = wire.Header{Seq: h.Seq + 1, Len: uint32(size)}
			return tx.Send(ctx, &h, p)
		}
		recv := func() {
			if err := rx.RecvHeader(ctx, &g); err != nil {
				t.Fatal(err)
			}
			var err error
			if g.Seq%2 == 0 {
				err = rx.RecvPayload(ctx, q)
			} else {
				err = rx.VisitPayload(ctx, size, visit)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		var allocs float64
		if size+wire.HeaderSize <= ring {
			// Small frames: send and receive in one goroutine.
			allocs = testing.AllocsPerRun(200, func() {
				if err := send(); err != nil {
					t.Fatal(err)
				}
				recv()
			})
		} else {
			// Larger than the ring: the sender is a goroutine started
			// before the measurement; AllocsPerRun runs f once to warm
			// up, then 200 times.
			errc := make(chan error, 1)
			go func() {
				for i := 0; i < 201; i++ {
					if err := send(); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			allocs = testing.AllocsPerRun(200, recv)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
		if allocs != 0 {
			t.Errorf("%d-byte frames through a %d-byte ring: %v allocations per frame", size, ring, allocs)
		}
	}
}

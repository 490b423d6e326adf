package shmlink

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/shm"
)

// BenchmarkSetup opens and closes one link, both ends in this process,
// for several ring sizes: as set up (every page read, warmRings), again
// with Warm on both ends (which then finds nothing left to read) or lazy
// (nothing touched beyond the headers):
// what a link costs to set up (handshake, segment, page tables, reads), in
// wall time and in CPU time of the process (cpu-us/op), which is what
// oversubscribed ranks pay.
func BenchmarkSetup(b *testing.B) {
	for _, c := range []struct {
		ring        int
		lazy, whole bool
	}{{64 << 10, false, false}, {256 << 10, false, false}, {1 << 20, false, false}, {4 << 20, false, false},
		{1 << 20, false, true}, {4 << 20, false, true}, {128 << 10, true, false}, {1 << 20, true, false}} {
		ring := c.ring
		name := fmt.Sprintf("ring=%dKiB", ring>>10)
		switch {
		case c.lazy:
			name += "/lazy"
		case c.whole:
			name += "/whole"
		}
		b.Run(name, func(b *testing.B) {
			key := make([]byte, 32)
			job := fmt.Sprintf("bench-setup-%d-%d", ring, time.Now().UnixNano())
			ln, err := Listen(job, 0, key, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			ctx := context.Background()
			var ru0, ru1 unix.Rusage
			unix.Getrusage(unix.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				done := make(chan *Link)
				go func() {
					l, _, err := ln.Accept(ctx)
					if err != nil {
						b.Error(err)
					}
					done <- l
				}()
				d, err := Dial(ctx, DialConfig{JobID: job, Addr: ln.Addr(), Key: key, Self: 1, Peer: 0, RingBytes: ring, Segment: shm.Options{Lazy: c.lazy}})
				if err != nil {
					b.Fatal(err)
				}
				a := <-done
				if c.whole {
					d.Warm()
				}
				if a != nil {
					if c.whole {
						a.Warm()
					}
					a.Close()
				}
				d.Close()
			}
			b.StopTimer()
			unix.Getrusage(unix.RUSAGE_SELF, &ru1)
			cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}

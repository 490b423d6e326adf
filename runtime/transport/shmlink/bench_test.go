package shmlink

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// memcpyGBps measures this machine's copy bandwidth for buffers of size
// bytes, for about d: the reference the link's figure is compared with.
func memcpyGBps(size int, d time.Duration) float64 {
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src) // first touch outside the measurement
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		copy(dst, src)
		n++
	}
	return float64(n*size) / time.Since(start).Seconds() / 1e9
}

// BenchmarkBandwidth streams frames of 1 MiB and 16 MiB from one goroutine
// to another through a link with the default ring, received by copy
// (RecvPayload) and in place (VisitPayload, copying each piece out as a
// reduction would read it). Every sub-benchmark reports its GB/s next to
// memcpy's GB/s for the same size measured in the same run, and their
// ratio. A link moves each byte twice (into the ring, out of it), on two
// cores at once.
func BenchmarkBandwidth(b *testing.B) {
	for _, size := range []int{1 << 20, 16 << 20} {
		for _, mode := range []string{"recv", "visit"} {
			b.Run(fmt.Sprintf("%s/%dMiB", mode, size>>20), func(b *testing.B) {
				benchBandwidth(b, 0, size, mode)
			})
		}
	}
}

// BenchmarkRingSize repeats the in-place 16 MiB case for several ring
// sizes: the evidence behind DefaultRingBytes.
func BenchmarkRingSize(b *testing.B) {
	for _, ring := range []int{64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("ring=%dKiB", ring>>10), func(b *testing.B) {
			benchBandwidth(b, ring, 16<<20, "visit")
		})
	}
}

func benchBandwidth(b *testing.B, ringBytes, size int, mode string) {
	ref := memcpyGBps(size, 200*time.Millisecond)
	rx, tx := pair(b, ringBytes)
	ctx := context.Background()
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src)
	errc := make(chan error, 1)
	b.SetBytes(int64(size))
	b.ResetTimer()
	go func() {
		h := wire.Header{Len: uint32(size)}
		for i := 0; i < b.N; i++ {
			if err := tx.Send(ctx, &h, src); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	var h wire.Header
	for i := 0; i < b.N; i++ {
		if err := rx.RecvHeader(ctx, &h); err != nil {
			b.Fatal(err)
		}
		var err error
		if mode == "recv" {
			err = rx.RecvPayload(ctx, dst)
		} else {
			err = rx.VisitPayload(ctx, size, func(off int, p []byte) { copy(dst[off:], p) })
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	gbps := float64(b.N) * float64(size) / b.Elapsed().Seconds() / 1e9
	b.ReportMetric(gbps, "GB/s")
	b.ReportMetric(ref, "memcpyGB/s")
	b.ReportMetric(gbps/ref, "x_memcpy")
}

// BenchmarkPingPong measures the round trip of a small frame: the latency
// floor of a collective step over shared memory.
func BenchmarkPingPong(b *testing.B) {
	for _, size := range []int{8, 4096} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			a, e := pair(b, 0)
			ctx := context.Background()
			p, q := make([]byte, size), make([]byte, size)
			errc := make(chan error, 1)
			go func() {
				var h wire.Header
				for i := 0; i < b.N; i++ {
					if err := e.RecvHeader(ctx, &h); err != nil {
						errc <- err
						return
					}
					if err := e.RecvPayload(ctx, q); err != nil {
						errc <- err
						return
					}
					if err := e.Send(ctx, &h, q); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			h := wire.Header{Len: uint32(size)}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := a.Send(ctx, &h, p); err != nil {
					b.Fatal(err)
				}
				if err := a.RecvHeader(ctx, &h); err != nil {
					b.Fatal(err)
				}
				if err := a.RecvPayload(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkBandwidthProcesses is BenchmarkBandwidth with the sender in
// another process (a re-executed test binary), as between two ranks: each
// process has its own Go runtime and the ring is shared across address
// spaces. In place only (VisitPayload, copying each piece out).
func BenchmarkBandwidthProcesses(b *testing.B) {
	for _, size := range []int{1 << 20, 16 << 20} {
		b.Run(fmt.Sprintf("visit/%dMiB", size>>20), func(b *testing.B) {
			ref := memcpyGBps(size, 200*time.Millisecond)
			ctx := context.Background()
			job, key := newJobID(), newKey(b)
			ln, err := Listen(job, 0, key, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childRoleEnv+"=source", childJobEnv+"="+job, childAddrEnv+"="+ln.Addr(), childKeyEnv+"="+hex.EncodeToString(key))
			cmd.Stderr = os.Stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() {
				stdin.Close()
				cmd.Process.Kill() // by PID
				cmd.Wait()
			}()
			actx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			link, _, err := ln.Accept(actx)
			if err != nil {
				b.Fatal(err)
			}
			defer link.Close()
			dst := make([]byte, size)
			copy(dst, make([]byte, size))
			b.SetBytes(int64(size))
			b.ResetTimer()
			fmt.Fprintln(stdin, b.N, size)
			var h wire.Header
			for i := 0; i < b.N; i++ {
				if err := link.RecvHeader(ctx, &h); err != nil {
					b.Fatal(err)
				}
				if err := link.VisitPayload(ctx, size, func(off int, p []byte) { copy(dst[off:], p) }); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			gbps := float64(b.N) * float64(size) / b.Elapsed().Seconds() / 1e9
			b.ReportMetric(gbps, "GB/s")
			b.ReportMetric(ref, "memcpyGB/s")
			b.ReportMetric(gbps/ref, "x_memcpy")
		})
	}
}

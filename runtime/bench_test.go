package runtime_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// Benchmarks of whole collectives between ranks of this process, over
// shared memory and over TCP, next to the machine's memcpy bandwidth
// measured in the same run as the reference. They report nccl-tests'
// algGB/s and busGB/s (AllReduce bus factor 2(n-1)/n).

var benchSizes = []int{8, 64 << 10, 1 << 20, 16 << 20}

func BenchmarkMemcpy(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(sizeName(size), func(b *testing.B) {
			src, dst := make([]byte, size), make([]byte, size)
			for i := range src {
				src[i] = byte(i)
			}
			copy(dst, src)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				copy(dst, src)
			}
		})
	}
}

func BenchmarkAllReduce(b *testing.B) {
	for _, transport := range []struct {
		name string
		opts []hccl.Option
	}{{"shm", nil}, {"tcp", []hccl.Option{hccl.WithShmDisabled(true)}}} {
		for _, n := range []int{2} {
			for _, size := range benchSizes {
				b.Run(fmt.Sprintf("%s/np%d/%s", transport.name, n, sizeName(size)), func(b *testing.B) {
					benchAllReduce(b, n, size, transport.opts...)
				})
			}
		}
	}
}

func benchAllReduce(b *testing.B, n, size int, opts ...hccl.Option) {
	j := startJobB(b, n, opts...)
	count := max(size/4, 1)
	bufs := make([][]float32, n)
	for r := range bufs {
		bufs[r] = make([]float32, count)
	}
	ctx := context.Background()
	run := func(iters int) {
		var wg sync.WaitGroup
		for r, c := range j.comms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range iters {
					if err := hccl.AllReduce(ctx, c, bufs[r], bufs[r], hccl.Sum); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	run(2) // warm up: open links, build plans
	b.ResetTimer()
	run(b.N)
	b.StopTimer()
	sec := b.Elapsed().Seconds() / float64(b.N)
	alg := float64(size) / sec / 1e9
	b.ReportMetric(alg, "algGB/s")
	b.ReportMetric(alg*2*float64(n-1)/float64(n), "busGB/s")
}

func sizeName(size int) string {
	if size < 1<<10 {
		return fmt.Sprintf("%dB", size)
	}
	if size >= 1<<20 {
		return fmt.Sprintf("%dMiB", size>>20)
	}
	return fmt.Sprintf("%dKiB", size>>10)
}

package control

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkPutGet is one Put and one Get of a 64-byte value by one rank:
// two round trips to the server on loopback.
func BenchmarkPutGet(b *testing.B) {
	j := newBenchJob(b, 1)
	c := j.dial(b, 0)
	v := make([]byte, 64)
	ctx := benchCtx(b)
	i := 0
	for b.Loop() {
		k := fmt.Sprintf("k%d", i)
		i++
		if err := c.Put(ctx, k, v); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Get(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBarrier8 is one barrier over 8 ranks (8 goroutines in this
// process, each with its own connection).
func BenchmarkBarrier8(b *testing.B) {
	const n = 8
	j := newBenchJob(b, n)
	ctx := benchCtx(b)
	clients := make([]*Client, n)
	for r := range n {
		clients[r] = j.dial(b, r)
	}
	start := make([]chan struct{}, n)
	var wg sync.WaitGroup
	for r := range n {
		start[r] = make(chan struct{}, 1)
	}
	for r := range n {
		go func() {
			for range start[r] {
				if err := clients[r].Barrier(ctx, "b"); err != nil {
					panic(err)
				}
				wg.Done()
			}
		}()
	}
	for b.Loop() {
		wg.Add(n)
		for r := range n {
			start[r] <- struct{}{}
		}
		wg.Wait()
	}
	for r := range n {
		close(start[r])
	}
}

type benchJob struct {
	s   *Server
	key []byte
}

func benchCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	b.Cleanup(cancel)
	return ctx
}

func newBenchJob(b *testing.B, n int) *benchJob {
	key := make([]byte, 32)
	s, err := NewServer(ServerConfig{Addr: "127.0.0.1:0", Key: key, Size: n})
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(benchCtx(b))
	b.Cleanup(func() { s.Close() })
	return &benchJob{s, key}
}

func (j *benchJob) dial(b *testing.B, rank int) *Client {
	c, err := Dial(benchCtx(b), j.s.Addr(), j.key, rank, j.s.cfg.Size, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkSetProgress is the runtime's cost per collective boundary.
func BenchmarkSetProgress(b *testing.B) {
	j := newBenchJob(b, 1)
	c := j.dial(b, 0)
	b.ReportAllocs()
	var seq uint64
	for b.Loop() {
		seq++
		c.SetProgress(seq, seq&1 == 1)
	}
}

// BenchmarkStatus is one Status round trip of a job whose other ranks
// have not joined: the reply size grows with the job, not with who came.
func BenchmarkStatus(b *testing.B) {
	for _, n := range []int{8, 4096, MaxStatusRanks} {
		b.Run(fmt.Sprintf("ranks=%d", n), func(b *testing.B) {
			j := newBenchJob(b, n)
			c := j.dial(b, 0)
			ctx := benchCtx(b)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Status(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

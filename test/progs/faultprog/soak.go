package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// The soak: every rank draws the same sequence of calls from the seed, runs
// each, and checks its own result exactly against values every rank can
// compute (element i of rank r in call k is a hash of seed, k, r and i).

type kind int

const (
	kAllReduce kind = iota
	kAllGather
	kReduceScatter
	kBroadcast
	kReduce
	kAlltoAll
	kAlltoAllV
	kBarrier
	numKinds
)

var kindNames = [numKinds]string{"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "AlltoAll", "AlltoAllV", "Barrier"}

// spec is one call of the soak, the same on every rank.
type spec struct {
	call    uint64
	kind    kind
	dt      int
	op      hccl.ReduceOp
	root    int
	count   int  // elements: of the buffer (AllReduce, Broadcast, Reduce) or of one rank's block
	inPlace bool // AllReduce, AllGather, ReduceScatter
	// AlltoAllV: counts[i][j] from rank i to rank j; the order of the
	// blocks in every rank's buffers and the gaps before them.
	counts           [][]int
	sendOrder, gapsS [][]int
	recvOrder, gapsR [][]int
}

func (s *spec) String() string {
	d := dtypes[s.dt]
	return fmt.Sprintf("call #%d %s %s count=%d op=%v root=%d inplace=%v", s.call, kindNames[s.kind], d.name, s.count, s.op, s.root, s.inPlace)
}

// soakState is what every call reuses.
type soakState struct {
	ctx        context.Context
	c          *hccl.Comm
	seed       uint64
	send, recv arena
	hs         []uint64 // one hash per rank, for a reduction
	bytes      int64    // payload moved by this rank
	// corruptFrom >= 0 spoils a result (see tamper).
	corruptFrom int64
}

// draw picks call k.
func draw(rng *rand.Rand, k uint64, n, maxBytes int) *spec {
	s := &spec{call: k, kind: kind(rng.IntN(int(numKinds))), dt: rng.IntN(len(dtypes))}
	d := dtypes[s.dt]
	ops := []hccl.ReduceOp{hccl.Sum, hccl.Prod, hccl.Max, hccl.Min}
	if d.float {
		ops = append(ops, hccl.Avg)
	}
	s.op = ops[rng.IntN(len(ops))]
	s.root = rng.IntN(n)
	s.inPlace = rng.IntN(3) == 0
	// Sizes skewed small: 2% empty, 0.5% the largest, the rest
	// 2^(log2(max)*u^3) bytes (median ~ 1 KiB, mean ~ 100 KiB at 4 MiB).
	var bytes int
	switch p := rng.IntN(1000); {
	case p < 20:
		bytes = 0
	case p < 25:
		bytes = maxBytes
	default:
		u := rng.Float64()
		bytes = int(math.Pow(2, math.Log2(float64(maxBytes))*u*u*u))
	}
	elems := bytes / d.size
	switch s.kind {
	case kAllReduce, kBroadcast, kReduce:
		s.count = elems
	case kAllGather, kReduceScatter, kAlltoAll:
		s.count = elems / n
	case kAlltoAllV:
		per := elems / n // at most n*per elements leave or reach a rank
		s.counts = make([][]int, n)
		for i := range n {
			s.counts[i] = make([]int, n)
			for j := range n {
				if rng.IntN(5) > 0 {
					s.counts[i][j] = rng.IntN(per + 1)
				}
			}
		}
		s.sendOrder, s.recvOrder = make([][]int, n), make([][]int, n)
		s.gapsS, s.gapsR = make([][]int, n), make([][]int, n)
		for r := range n {
			s.sendOrder[r], s.recvOrder[r] = rng.Perm(n), rng.Perm(n)
			s.gapsS[r], s.gapsR[r] = make([]int, n), make([]int, n)
			for j := range n {
				s.gapsS[r][j], s.gapsR[r][j] = rng.IntN(4), rng.IntN(4)
			}
		}
	}
	return s
}

func soak(ctx context.Context, c *hccl.Comm, cfg config) {
	n := c.Size()
	// AlltoAllV adds up to 3 gap elements per block: room for 8-byte ones.
	st := &soakState{ctx: ctx, c: c, seed: cfg.seed,
		send: newArena(cfg.maxB + 32*n), recv: newArena(cfg.maxB + 32*n), hs: make([]uint64, n), corruptFrom: cfg.corrupt}
	rng := rand.New(rand.NewPCG(cfg.seed, 0x50a6))
	var perKind [numKinds]int
	start := time.Now()
	sample(c, 0, start)
	for k := 0; k < cfg.calls; k++ {
		s := draw(rng, uint64(k), n, cfg.maxB)
		if err := dtypes[s.dt].run(st, s); err != nil {
			if _, ok := err.(*wrongResult); ok {
				wrong(c, "%v", err)
			}
			fmt.Printf("rank %d failed %v\n", c.Rank(), s)
			fail(c, err)
		}
		perKind[s.kind]++
		if (k+1)%cfg.sample == 0 {
			sample(c, k+1, start)
		}
	}
	var kinds []string
	for k, v := range perKind {
		kinds = append(kinds, fmt.Sprintf("%s:%d", kindNames[k], v))
	}
	fmt.Printf("rank %d done soak calls=%d bytes=%d ms=%d kinds=%s\n", c.Rank(), cfg.calls, st.bytes,
		time.Since(start).Milliseconds(), strings.Join(kinds, ","))
}

// sample prints the rank's goroutines, open fds, RSS, the heap in use
// (garbage included) and the live heap (after a collection: a leak shows
// there first, while RSS follows the collector's rhythm).
func sample(c *hccl.Comm, calls int, start time.Time) {
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	heap := ms.HeapAlloc
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	fds := -1
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = len(ents) - 1 // the directory being read
	}
	fmt.Printf("rank %d sample calls=%d goroutines=%d fds=%d rss_kib=%d heap_kib=%d live_kib=%d ms=%d\n", c.Rank(), calls,
		goruntime.NumGoroutine(), fds, rssKiB(), heap>>10, ms.HeapAlloc>>10, time.Since(start).Milliseconds())
}

// rssKiB reads VmRSS from /proc/self/status.
func rssKiB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kib int
			fmt.Sscan(v, &kib)
			return kib
		}
	}
	return -1
}

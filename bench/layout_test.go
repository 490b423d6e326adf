package bench

import (
	"math"
	"testing"
)

func TestNewLayout(t *testing.T) {
	tests := []struct {
		coll                    Coll
		size                    int64
		elem, n                 int
		bytes                   int64
		count, sendCnt, recvCnt int
	}{
		{AllReduce, 8, 4, 2, 8, 2, 2, 2},
		{AllReduce, 10, 4, 2, 8, 2, 2, 2}, // rounded down to whole elements
		{AllReduce, 0, 4, 2, 0, 0, 0, 0},
		{AllGather, 8, 4, 2, 8, 1, 1, 2},
		{AllGather, 4, 4, 2, 0, 0, 0, 0},   // one element cannot be split over 2 ranks
		{AllGather, 40, 4, 3, 36, 3, 3, 9}, // 10 elements -> 3 per rank
		{ReduceScatter, 40, 4, 3, 36, 3, 9, 3},
		{AlltoAll, 40, 4, 3, 36, 3, 9, 9},
		{AlltoAll, 1 << 20, 4, 2, 1 << 20, 1 << 17, 1 << 18, 1 << 18},
		{Broadcast, 40, 4, 3, 40, 10, 10, 10},
		{Reduce, 6, 2, 4, 6, 3, 3, 3},
		// k = 4 on 2 ranks: blocks k/2 = 2 and k/2 + k = 6, total 8.
		{AlltoAllV, 32, 4, 2, 32, 4, 8, 8},
		// k = 3 on 3 ranks: blocks 1, 1+3*1/2 = 2, 1+3*2/2 = 4, total 7.
		{AlltoAllV, 40, 4, 3, 28, 3, 7, 7},
	}
	for _, tt := range tests {
		l := NewLayout(tt.coll, tt.size, tt.elem, tt.n)
		if l.Bytes != tt.bytes || l.Count != tt.count || l.SendCount != tt.sendCnt || l.RecvCount != tt.recvCnt {
			t.Errorf("NewLayout(%v, %d, %d, %d) = bytes %d count %d send %d recv %d; want %d %d %d %d",
				tt.coll, tt.size, tt.elem, tt.n, l.Bytes, l.Count, l.SendCount, l.RecvCount,
				tt.bytes, tt.count, tt.sendCnt, tt.recvCnt)
		}
	}
}

// TestVCounts checks what the AlltoAllV case relies on: every rank's sends
// match the receivers' expectations, totals are equal everywhere and fit
// the buffers (at most n*k), and displacements pack the blocks.
func TestVCounts(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7, 8} {
		for _, k := range []int{0, 1, 2, 3, 10, 1000} {
			v := newVCounts(n, k)
			if v.total > n*k {
				t.Errorf("n=%d k=%d: total %d > n*k", n, k, v.total)
			}
			for i := range n {
				sc, sd := v.sendLayout(i)
				rc, rd := v.recvLayout(i)
				sumS, sumR := 0, 0
				for j := range n {
					if sd[j] != sumS || rd[j] != sumR {
						t.Fatalf("n=%d k=%d rank %d: displacements not packed: %v %v", n, k, i, sd, rd)
					}
					sumS += sc[j]
					sumR += rc[j]
					peerRC, _ := v.recvLayout(j)
					if sc[j] != peerRC[i] {
						t.Errorf("n=%d k=%d: rank %d sends %d to %d, which expects %d", n, k, i, sc[j], j, peerRC[i])
					}
				}
				if sumS != v.total || sumR != v.total {
					t.Errorf("n=%d k=%d rank %d: sends %d, receives %d, total %d", n, k, i, sumS, sumR, v.total)
				}
			}
		}
	}
}

func TestBandwidth(t *testing.T) {
	l := NewLayout(AllReduce, 1<<20, 4, 4)
	alg, bus := l.Bandwidth(1e-3)
	if math.Abs(alg-1.048576) > 1e-12 || math.Abs(bus-1.048576*1.5) > 1e-12 {
		t.Errorf("1 MiB allreduce on 4 ranks in 1 ms: algbw %v busbw %v, want 1.048576 and 1.572864", alg, bus)
	}
	if alg, bus := l.Bandwidth(0); alg != 0 || bus != 0 {
		t.Errorf("zero time: %v %v, want zeros", alg, bus)
	}
}

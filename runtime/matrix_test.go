package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
	"github.com/hcclrun/hcclrun/runtime/algo"
)

// The collective matrix: every collective x element type x operator x rank
// count x count, checked bit for bit against the naive reference, in one
// process over the real transport.

var (
	matrixRanks  = []int{1, 2, 3, 4, 5, 7, 8}
	matrixCounts = []int{0, 1, 7, 1000, 100003}
)

// typeCheck runs the whole matrix of one element type on a job.
type typeCheck struct {
	name string
	run  func(t *testing.T, j *testJob, counts []int)
}

var matrixTypes = []typeCheck{
	{"int8", checkType[int8]}, {"uint8", checkType[uint8]},
	{"int16", checkType[int16]}, {"uint16", checkType[uint16]},
	{"int32", checkType[int32]}, {"uint32", checkType[uint32]},
	{"int64", checkType[int64]}, {"uint64", checkType[uint64]},
	{"float16", checkType[hccl.Float16]}, {"bfloat16", checkType[hccl.BFloat16]},
	{"float32", checkType[float32]}, {"float64", checkType[float64]},
}

func TestCollectiveMatrix(t *testing.T) {
	for _, n := range matrixRanks {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) {
			runMatrix(t, n, matrixCounts)
		})
	}
}

// runMatrix runs every type's matrix on one job of n ranks started with opts.
func runMatrix(t *testing.T, n int, counts []int, opts ...hccl.Option) {
	runMatrixOf(t, matrixTypes, n, counts, opts...)
}

func runMatrixOf(t *testing.T, types []typeCheck, n int, counts []int, opts ...hccl.Option) {
	runMatrixOn(t, startJob(t, n, opts...), types, counts)
}

func runMatrixOn(t *testing.T, j *testJob, types []typeCheck, counts []int) {
	for _, tc := range types {
		t.Run(tc.name, func(t *testing.T) {
			j.t = t
			tc.run(t, j, counts)
		})
	}
}

func opsFor[T hccl.Element]() []hccl.ReduceOp {
	if isFloat[T]() {
		return []hccl.ReduceOp{hccl.Sum, hccl.Prod, hccl.Max, hccl.Min, hccl.Avg}
	}
	return []hccl.ReduceOp{hccl.Sum, hccl.Prod, hccl.Max, hccl.Min}
}

// rootsFor lists the roots tested for n ranks: all of them for small jobs.
func rootsFor(n int) []int {
	if n <= 4 {
		r := make([]int, n)
		for i := range r {
			r[i] = i
		}
		return r
	}
	return []int{0, n / 2, n - 1}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func fill[T hccl.Element](op hccl.ReduceOp, r, n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = value[T](op, r, i)
	}
	return s
}

func checkType[T hccl.Element](t *testing.T, j *testJob, counts []int) {
	n := len(j.comms)
	ctx := ctxFor(t)
	for _, count := range counts {
		for _, op := range opsFor[T]() {
			want := make([]T, n*count)
			for i := range want {
				want[i] = reduced[T](op, n, i)
			}
			for _, inPlace := range []bool{false, true} {
				what := fmt.Sprintf("AllReduce count %d %v inplace=%v", count, op, inPlace)
				j.must(what, func(c *hccl.Comm) error {
					send := fill[T](op, c.Rank(), count)
					recv := send
					if !inPlace {
						recv = make([]T, count)
					}
					if err := hccl.AllReduce(ctx, c, send, recv, op); err != nil {
						return err
					}
					return sameBits(recv, want[:count])
				})
				what = fmt.Sprintf("ReduceScatter count %d %v inplace=%v", count, op, inPlace)
				j.must(what, func(c *hccl.Comm) error {
					send := fill[T](op, c.Rank(), n*count)
					recv := send[c.Rank()*count : (c.Rank()+1)*count]
					if !inPlace {
						recv = make([]T, count)
					}
					if err := hccl.ReduceScatter(ctx, c, send, recv, op); err != nil {
						return err
					}
					return sameBits(recv, want[c.Rank()*count:(c.Rank()+1)*count])
				})
			}
			for _, root := range rootsFor(n) {
				what := fmt.Sprintf("Reduce count %d %v root %d", count, op, root)
				j.must(what, func(c *hccl.Comm) error {
					send := fill[T](op, c.Rank(), count)
					var recv []T
					if c.Rank() == root {
						recv = make([]T, count)
					}
					if err := hccl.Reduce(ctx, c, send, recv, op, root); err != nil {
						return err
					}
					if c.Rank() != root {
						return sameBits(send, fill[T](op, c.Rank(), count)) // untouched
					}
					return sameBits(recv, want[:count])
				})
			}
		}
		checkMovers[T](t, j, ctx, count)
	}
}

// checkMovers checks the collectives that move data without reducing.
func checkMovers[T hccl.Element](t *testing.T, j *testJob, ctx context.Context, count int) {
	n := len(j.comms)
	for _, inPlace := range []bool{false, true} {
		j.must(fmt.Sprintf("AllGather count %d inplace=%v", count, inPlace), func(c *hccl.Comm) error {
			recv := make([]T, n*count)
			send := fill[T](hccl.Sum, c.Rank(), count)
			if inPlace {
				copy(recv[c.Rank()*count:], send)
				send = recv[c.Rank()*count : (c.Rank()+1)*count]
			}
			if err := hccl.AllGather(ctx, c, send, recv); err != nil {
				return err
			}
			want := make([]T, 0, n*count)
			for r := range n {
				want = append(want, fill[T](hccl.Sum, r, count)...)
			}
			return sameBits(recv, want)
		})
	}
	for _, root := range rootsFor(n) {
		j.must(fmt.Sprintf("Broadcast count %d root %d", count, root), func(c *hccl.Comm) error {
			buf := make([]T, count)
			if c.Rank() == root {
				buf = fill[T](hccl.Sum, root, count)
			}
			if err := hccl.Broadcast(ctx, c, buf, root); err != nil {
				return err
			}
			return sameBits(buf, fill[T](hccl.Sum, root, count))
		})
	}
	// AlltoAll with count elements per block.
	j.must(fmt.Sprintf("AlltoAll block %d", count), func(c *hccl.Comm) error {
		send := fill[T](hccl.Sum, c.Rank(), n*count)
		recv := make([]T, n*count)
		if err := hccl.AlltoAll(ctx, c, send, recv); err != nil {
			return err
		}
		want := make([]T, 0, n*count)
		for r := range n {
			want = append(want, fill[T](hccl.Sum, r, n*count)[c.Rank()*count:(c.Rank()+1)*count]...)
		}
		return sameBits(recv, want)
	})
	// AlltoAllV with uneven counts derived from count: rank i sends
	// vcount(i, j) elements to rank j, taken from its buffer in reverse peer
	// order so that displacements are not simply increasing.
	vcount := func(i, j int) int { return (count*(1+(i+2*j)%3) + i + j) / 3 }
	j.must(fmt.Sprintf("AlltoAllV around %d", count), func(c *hccl.Comm) error {
		me := c.Rank()
		sendCounts, sdispls := make([]int, n), make([]int, n)
		recvCounts, rdispls := make([]int, n), make([]int, n)
		total := 0
		for k := n - 1; k >= 0; k-- {
			sendCounts[k], sdispls[k] = vcount(me, k), total
			total += sendCounts[k]
		}
		send := fill[T](hccl.Sum, me, total)
		total = 0
		for i := range n {
			recvCounts[i], rdispls[i] = vcount(i, me), total+1 // a gap of one element
			total += recvCounts[i] + 1
		}
		recv := make([]T, total)
		if err := hccl.AlltoAllV(ctx, c, send, sendCounts, sdispls, recv, recvCounts, rdispls); err != nil {
			return err
		}
		want := make([]T, total)
		for i := range n {
			// rank i's block for me starts after its blocks for ranks > me
			off := 0
			for k := n - 1; k > me; k-- {
				off += vcount(i, k)
			}
			src := fill[T](hccl.Sum, i, off+vcount(i, me))
			copy(want[rdispls[i]:], src[off:])
		}
		return sameBits(recv, want)
	})
	j.must("Barrier", func(c *hccl.Comm) error { return c.Barrier(ctx) })
}

// TestCollectiveMatrixTCP runs the matrix with shared memory disabled, so
// that ranks of this one process talk through TCP as ranks of different
// servers do.
func TestCollectiveMatrixTCP(t *testing.T) {
	for _, n := range matrixRanks {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) {
			runMatrix(t, n, matrixCounts, hccl.WithShmDisabled(true))
		})
	}
}

// TestForcedAlgorithms runs every algorithm, forced through HCCL_ALGO for
// the collectives it serves, over shared memory and TCP at 3, 4 and 5
// ranks, on a few element types (the algorithms do not depend on the type;
// the kernels are tested on all of them above).
func TestForcedAlgorithms(t *testing.T) {
	types := []typeCheck{matrixTypes[0], matrixTypes[8], matrixTypes[11]} // int8, float16, float64
	for _, a := range algo.All() {
		served, ok := a.(algo.Collectives)
		if !ok {
			continue
		}
		var spec []string
		for _, c := range served.Colls() {
			spec = append(spec, strings.ToLower(c.String())+":"+a.Name())
		}
		// hier needs servers: ranks of this process claim to sit on them,
		// two or three to a server, or 2+1, or 3+2+1 not contiguous.
		layouts := [][]int{make([]int, 3), make([]int, 4), make([]int, 5)}
		if a.Name() == "hier" {
			layouts = [][]int{{0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}, {0, 0, 1}, {0, 1, 2, 0, 1, 0}}
		}
		for _, tr := range []string{"shm", "tcp"} {
			for _, labels := range layouts {
				n := len(labels)
				t.Run(fmt.Sprintf("%s/%s/np%d/%v", a.Name(), tr, n, labels), func(t *testing.T) {
					opts := []hccl.Option{hccl.WithAlgo(strings.Join(spec, ";")), hccl.WithShmDisabled(tr == "tcp")}
					j := newJobServers(t, labels, opts...)
					j.t = t
					runMatrixOn(t, j, types, []int{0, 1, 7, 1000})
				})
			}
		}
	}
}

// TestCollectiveMatrixSmallBuffers runs the matrix through 4 KiB shared-
// memory rings (1 KiB pipeline segments): no plan may rely on a link
// buffering a whole transfer.
func TestCollectiveMatrixSmallBuffers(t *testing.T) {
	types := []typeCheck{matrixTypes[2], matrixTypes[10]} // int16, float32
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("np%d", n), func(t *testing.T) {
			runMatrixOf(t, types, n, matrixCounts, hccl.WithBufferSize(4096))
		})
	}
}

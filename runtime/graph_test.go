package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// Graph mode is checked against the same calls made one by one: a program
// of nodes is run both ways on buffers filled alike, and every buffer must
// come out bit for bit the same, on every rank, fused and unfused, after a
// first replay and after a second over changed buffers.

type gKind int

const (
	gAllReduce gKind = iota
	gBroadcast
	gReduce
	gAllGather
	gReduceScatter
	gAlltoAll
	gAlltoAllV
	gBarrier
	// A ReduceScatter and the AllGather of its result, aliased as
	// gNode.alias says: two nodes of the graph, which Compile may merge.
	gScatterGather
	gKinds
)

type gNode struct {
	kind    gKind
	count   int
	op      hccl.ReduceOp
	root    int
	inPlace bool
	alias   int // gScatterGather: the aliasing of its buffers (scatterGatherArgs)
	// chain: an AllReduce out of place whose send is the recv of the
	// node before, an AllReduce of its count: it reads what that wrote.
	chain bool
}

// chained says whether node k of prog, n, reads node k-1's recv.
func (n gNode) chained(prog []gNode, k int) bool {
	return n.chain && n.kind == gAllReduce && !n.inPlace && k > 0 &&
		prog[k-1].kind == gAllReduce && prog[k-1].count == n.count
}

func (n gNode) String() string {
	return fmt.Sprintf("{%d %d %v %d %v %d %v}", n.kind, n.count, n.op, n.root, n.inPlace, n.alias, n.chain)
}

// gBufs are one rank's buffers of a program: send and recv per node.
type gBufs[T hccl.Element] struct {
	send, recv [][]T
	sc, sd     [][]int // AlltoAllV's
	rc, rd     [][]int
}

func gVcount(count, i, j int) int { return (count*(1+(i+2*j)%3) + i + j) / 3 }

// newGBufs allocates rank me's buffers of prog in a job of n ranks.
func newGBufs[T hccl.Element](prog []gNode, me, n int) *gBufs[T] {
	b := &gBufs[T]{}
	for k, p := range prog {
		var s, r []T
		var sc, sd, rc, rd []int
		switch p.kind {
		case gAllReduce, gReduce:
			s, r = make([]T, p.count), make([]T, p.count)
			if p.chained(prog, k) {
				s = b.recv[k-1]
			}
		case gBroadcast:
			s = make([]T, p.count)
			r = s
		case gAllGather:
			s, r = make([]T, p.count), make([]T, n*p.count)
		case gReduceScatter:
			s, r = make([]T, n*p.count), make([]T, p.count)
		case gAlltoAll:
			s, r = make([]T, n*p.count), make([]T, n*p.count)
		case gScatterGather:
			s, r = make([]T, n*p.count), make([]T, (n+1)*p.count)
		case gAlltoAllV:
			sc, sd, rc, rd = make([]int, n), make([]int, n), make([]int, n), make([]int, n)
			st, rt := 0, 0
			for k := range n {
				sc[k], sd[k] = gVcount(p.count, me, k), st
				st += sc[k]
				rc[k], rd[k] = gVcount(p.count, k, me), rt
				rt += rc[k]
			}
			s, r = make([]T, st), make([]T, rt)
		}
		b.send, b.recv = append(b.send, s), append(b.recv, r)
		b.sc, b.sd, b.rc, b.rd = append(b.sc, sc), append(b.sd, sd), append(b.rc, rc), append(b.rd, rd)
	}
	return b
}

// fill writes step's contents into the buffers (in place, so a compiled
// graph holding them sees the change).
func (b *gBufs[T]) fill(prog []gNode, me, step int) {
	for k, p := range prog {
		for i := range b.send[k] {
			b.send[k][i] = value[T](p.op, me, i+13*k+step)
		}
		if p.kind != gBroadcast {
			for i := range b.recv[k] {
				b.recv[k][i] = value[T](hccl.Sum, me+1, i+step)
			}
		}
	}
}

// args returns node k's send and recv, aliased as the node asks.
func (b *gBufs[T]) args(p gNode, k, me, n int) (send, recv []T) {
	send, recv = b.send[k], b.recv[k]
	if !p.inPlace {
		return send, recv
	}
	switch p.kind {
	case gAllReduce:
		return recv, recv
	case gReduce:
		if me == p.root {
			return recv, recv
		}
	case gAllGather:
		return recv[me*p.count : (me+1)*p.count], recv
	case gReduceScatter:
		return send, send[me*p.count : (me+1)*p.count]
	}
	return send, recv
}

// scatterGatherArgs returns a gScatterGather node's buffers: the
// ReduceScatter's send and recv, and the AllGather's recv (its send is
// the ReduceScatter's recv). By alias: 0, all apart; 1, the AllGather
// gathers into the send; 2, also the ReduceScatter in place (a sharded
// optimizer's step); 3, the ReduceScatter in place, the AllGather apart;
// -1, 2 on even ranks and 0 on odd ones, which no rank may merge.
func (b *gBufs[T]) scatterGatherArgs(p gNode, k, me int) (send, block, out []T) {
	send, block, out = b.send[k], b.recv[k][:p.count], b.recv[k][p.count:]
	alias := p.alias
	if alias < 0 {
		alias = 2 * (1 - me%2)
	}
	if alias == 2 || alias == 3 {
		block = send[me*p.count : (me+1)*p.count]
	}
	if alias == 1 || alias == 2 {
		out = send
	}
	return send, block, out
}

// apply records prog on g, or, g nil, calls it one by one.
func apply[T hccl.Element](ctx context.Context, c *hccl.Comm, g *hccl.Graph, prog []gNode, b *gBufs[T]) error {
	me, n := c.Rank(), c.Size()
	for k, p := range prog {
		s, r := b.args(p, k, me, n)
		var err error
		switch {
		case p.kind == gAllReduce && g != nil:
			err = hccl.GraphAllReduce(g, s, r, p.op)
		case p.kind == gAllReduce:
			err = hccl.AllReduce(ctx, c, s, r, p.op)
		case p.kind == gBroadcast && g != nil:
			err = hccl.GraphBroadcast(g, s, p.root)
		case p.kind == gBroadcast:
			err = hccl.Broadcast(ctx, c, s, p.root)
		case p.kind == gReduce && g != nil:
			err = hccl.GraphReduce(g, s, r, p.op, p.root)
		case p.kind == gReduce:
			err = hccl.Reduce(ctx, c, s, r, p.op, p.root)
		case p.kind == gAllGather && g != nil:
			err = hccl.GraphAllGather(g, s, r)
		case p.kind == gAllGather:
			err = hccl.AllGather(ctx, c, s, r)
		case p.kind == gReduceScatter && g != nil:
			err = hccl.GraphReduceScatter(g, s, r, p.op)
		case p.kind == gReduceScatter:
			err = hccl.ReduceScatter(ctx, c, s, r, p.op)
		case p.kind == gAlltoAll && g != nil:
			err = hccl.GraphAlltoAll(g, s, r)
		case p.kind == gAlltoAll:
			err = hccl.AlltoAll(ctx, c, s, r)
		case p.kind == gAlltoAllV && g != nil:
			err = hccl.GraphAlltoAllV(g, s, b.sc[k], b.sd[k], r, b.rc[k], b.rd[k])
		case p.kind == gAlltoAllV:
			err = hccl.AlltoAllV(ctx, c, s, b.sc[k], b.sd[k], r, b.rc[k], b.rd[k])
		case p.kind == gScatterGather:
			send, block, out := b.scatterGatherArgs(p, k, me)
			err = scatterGather(ctx, c, g, p, send, block, out)
		case p.kind == gBarrier && g != nil:
			err = g.Barrier()
		case p.kind == gBarrier:
			err = c.Barrier(ctx)
		}
		if err != nil {
			return fmt.Errorf("node %d %v: %w", k, p, err)
		}
	}
	return nil
}

// scatterGather records or makes a gScatterGather node's two calls.
func scatterGather[T hccl.Element](ctx context.Context, c *hccl.Comm, g *hccl.Graph, p gNode, send, block, out []T) error {
	if g != nil {
		if err := hccl.GraphReduceScatter(g, send, block, p.op); err != nil {
			return err
		}
		return hccl.GraphAllGather(g, block, out)
	}
	if err := hccl.ReduceScatter(ctx, c, send, block, p.op); err != nil {
		return err
	}
	return hccl.AllGather(ctx, c, block, out)
}

// checkGraph runs prog as a graph (fuse as Graph.FuseBytes) and one by one
// on every rank of j, twice, and compares every buffer.
func checkGraph[T hccl.Element](t *testing.T, j *testJob, prog []gNode, fuse int, wantFused bool) {
	t.Helper()
	checkGraphThen[T](t, j, prog, fuse, wantFused, nil)
}

// checkGraphThen is checkGraph with then, when set, called on every rank
// between Compile and the first replay.
func checkGraphThen[T hccl.Element](t *testing.T, j *testJob, prog []gNode, fuse int, wantFused bool,
	then func(*hccl.Comm, *hccl.Executable) error) {
	t.Helper()
	ctx := ctxFor(t)
	n := len(j.comms)
	j.must(fmt.Sprintf("graph %v fuse %d", prog, fuse), func(c *hccl.Comm) error {
		me := c.Rank()
		gb, db := newGBufs[T](prog, me, n), newGBufs[T](prog, me, n)
		g := hccl.NewGraph(c)
		g.FuseBytes = fuse
		if err := apply(ctx, c, g, prog, gb); err != nil {
			return err
		}
		exe, err := g.Compile(ctx)
		if err != nil {
			return err
		}
		defer exe.Close()
		if wantFused && exe.Steps() >= len(prog) {
			return fmt.Errorf("%d nodes compiled to %d steps, want fewer", len(prog), exe.Steps())
		}
		if then != nil {
			if err := then(c, exe); err != nil {
				return err
			}
		}
		for step := range 2 {
			gb.fill(prog, me, step)
			db.fill(prog, me, step)
			if err := exe.Run(ctx); err != nil {
				return fmt.Errorf("replay %d: %w", step, err)
			}
			if err := apply(ctx, c, nil, prog, db); err != nil {
				return fmt.Errorf("one by one %d: %w", step, err)
			}
			for k := range prog {
				if err := sameBits(gb.send[k], db.send[k]); err != nil {
					return fmt.Errorf("replay %d node %d %v send: %w", step, k, prog[k], err)
				}
				if err := sameBits(gb.recv[k], db.recv[k]); err != nil {
					return fmt.Errorf("replay %d node %d %v recv: %w", step, k, prog[k], err)
				}
			}
		}
		return nil
	})
}

// everyNode is a program with every collective, in and out of place, with
// runs of small AllReduces that fuse.
func everyNode(n int, avg bool) []gNode {
	op := hccl.Sum
	if avg {
		op = hccl.Avg
	}
	return []gNode{
		{kind: gAllReduce, count: 7, op: op}, {kind: gAllReduce, count: 1000, op: op, inPlace: true},
		{kind: gAllReduce, count: 0, op: op}, {kind: gAllReduce, count: 33, op: op},
		{kind: gBroadcast, count: 100, root: n - 1},
		{kind: gAllReduce, count: 64, op: hccl.Max}, {kind: gAllReduce, count: 5, op: hccl.Max},
		{kind: gReduce, count: 50, op: hccl.Sum, root: n / 2}, {kind: gReduce, count: 9, op: hccl.Min, root: 0, inPlace: true},
		{kind: gAllGather, count: 11}, {kind: gAllGather, count: 300, inPlace: true},
		{kind: gReduceScatter, count: 17, op: hccl.Sum}, {kind: gReduceScatter, count: 4, op: hccl.Max, inPlace: true},
		{kind: gAlltoAll, count: 6}, {kind: gAlltoAllV, count: 20}, {kind: gBarrier},
		{kind: gAllReduce, count: 3000, op: hccl.Prod}, {kind: gAllReduce, count: 1, op: hccl.Prod},
		{kind: gScatterGather, count: 40, op: op, alias: 2}, {kind: gScatterGather, count: 9, op: hccl.Max, alias: 1},
		{kind: gScatterGather, count: 5000, op: hccl.Sum, alias: 0}, {kind: gScatterGather, count: 13, op: hccl.Min, alias: 3},
		{kind: gScatterGather, count: 21, op: op, alias: -1},
	}
}

func TestGraphMatchesCalls(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		for n := 1; n <= 5; n++ {
			t.Run(fmt.Sprintf("tcp=%v/np%d", tcp, n), func(t *testing.T) {
				j := startJob(t, n, hccl.WithShmDisabled(tcp))
				// One rank's in-place calls cost nothing: buckets would
				// only add their copies, and none is made.
				fuses := n > 1
				for _, fuse := range []int{-1, 0} {
					checkGraph[float32](t, j, everyNode(n, true), fuse, fuse == 0 && fuses)
					checkGraph[int32](t, j, everyNode(n, false), fuse, fuse == 0 && fuses)
					checkGraph[hccl.BFloat16](t, j, everyNode(n, true), fuse, fuse == 0 && fuses)
					checkGraph[uint8](t, j, everyNode(n, false), fuse, fuse == 0 && fuses)
					checkGraph[float64](t, j, everyNode(n, false), fuse, fuse == 0 && fuses)
				}
				// A small cap splits a run of AllReduces into several buckets.
				checkGraph[int64](t, j, everyNode(n, false), 4096, fuses)
			})
		}
	}
}

// randomProgram is a graph shape from r: mostly AllReduces (so that runs
// fuse), every other collective now and then.
func randomProgram(r *rand.Rand, n int, float bool) []gNode {
	ops := []hccl.ReduceOp{hccl.Sum, hccl.Max, hccl.Min, hccl.Prod}
	if float {
		ops = append(ops, hccl.Avg)
	}
	counts := []int{0, 1, 3, 100, 1000, 5000}
	prog := make([]gNode, 1+r.IntN(20))
	for i := range prog {
		k := gAllReduce
		if r.IntN(3) == 0 {
			k = gKind(r.IntN(int(gKinds)))
		}
		prog[i] = gNode{kind: k, count: counts[r.IntN(len(counts))], op: ops[r.IntN(len(ops))],
			root: r.IntN(n), inPlace: r.IntN(2) == 0, alias: r.IntN(5) - 1, chain: r.IntN(3) == 0}
		if r.IntN(2) == 0 && i > 0 && prog[i-1].kind == gAllReduce && k == gAllReduce {
			prog[i].op = prog[i-1].op // runs of one op fuse
			if prog[i].chain {
				prog[i].count = prog[i-1].count
			}
		}
	}
	return prog
}

func TestGraphRandomShapes(t *testing.T) {
	for _, n := range []int{2, 3} {
		j := startJob(t, n)
		for seed := range uint64(12) {
			prog := randomProgram(rand.New(rand.NewPCG(seed, uint64(n))), n, true)
			fuse := []int{-1, 0, 8000}[seed%3]
			checkGraph[float32](t, j, prog, fuse, false)
		}
	}
}

// FuzzGraphShapes runs random graph shapes (from the fuzzer's seed) at 3
// ranks against the same calls one by one.
func FuzzGraphShapes(f *testing.F) {
	for _, s := range []uint64{1, 7, 42} {
		f.Add(s, int32(0))
	}
	f.Fuzz(func(t *testing.T, seed uint64, fuse int32) {
		const n = 3
		j := startJob(t, n)
		prog := randomProgram(rand.New(rand.NewPCG(seed, 0)), n, false)
		checkGraph[int32](t, j, prog, int(fuse)%(1<<20), false)
	})
}

// TestGraphMismatch: a rank that recorded a different graph makes Compile
// fail on every rank, each naming the first differing node and the ranks.
func TestGraphMismatch(t *testing.T) {
	cases := []struct {
		name string
		edit func(prog []gNode) []gNode
		want string
	}{
		{"count", func(p []gNode) []gNode { p[2].count++; return p }, "graph node 2: rank 0 recorded AllReduce float32 count 0 op avg, rank 2 recorded AllReduce float32 count 1 op avg"},
		{"op", func(p []gNode) []gNode { p[5].op = hccl.Min; return p }, "graph node 5"},
		{"root", func(p []gNode) []gNode { p[4].root = 0; return p }, "graph node 4"},
		{"shorter", func(p []gNode) []gNode { return p[:len(p)-1] }, "rank 2 recorded no node"},
	}
	const n = 3
	j := startJob(t, n)
	ctx := ctxFor(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := j.each(func(c *hccl.Comm) error {
				prog := everyNode(n, true)
				if c.Rank() == 2 {
					prog = tc.edit(prog)
				}
				g := hccl.NewGraph(c)
				if err := apply(ctx, c, g, prog, newGBufs[float32](prog, c.Rank(), n)); err != nil {
					return err
				}
				return compileOnly(ctx, g)
			})
			for r, err := range errs {
				if !errors.Is(err, hccl.ErrMismatch) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("rank %d: Compile: %v, want ErrMismatch with %q", r, err, tc.want)
				}
			}
			// The communicator is still usable after a failed Compile.
			j.t = t
			j.must("barrier", func(c *hccl.Comm) error { return c.Barrier(ctx) })
		})
	}
}

// TestGraphInvalid: a bad recording fails at once and again at Compile,
// before anything is sent; a closed Executable says so.
func TestGraphInvalid(t *testing.T) {
	j := startJob(t, 2)
	ctx := ctxFor(t)
	j.t = t
	j.must("invalid", func(c *hccl.Comm) error {
		g := hccl.NewGraph(c)
		if err := hccl.GraphAllReduce(g, make([]int32, 3), make([]int32, 4), hccl.Sum); !errors.Is(err, hccl.ErrInvalidArgument) {
			return fmt.Errorf("GraphAllReduce: %v, want ErrInvalidArgument", err)
		}
		if _, err := g.Compile(ctx); !errors.Is(err, hccl.ErrInvalidArgument) || !strings.Contains(err.Error(), "graph node 0") {
			return fmt.Errorf("Compile: %v, want ErrInvalidArgument at node 0", err)
		}
		g = hccl.NewGraph(c)
		hccl.GraphAllReduce(g, make([]int32, 3), make([]int32, 3), hccl.Sum)
		exe, err := g.Compile(ctx)
		if err != nil {
			return err
		}
		exe.Close()
		if err := exe.Run(ctx); !errors.Is(err, hccl.ErrClosed) {
			return fmt.Errorf("Run after Close: %v, want ErrClosed", err)
		}
		// An empty graph compiles and replays to nothing.
		exe, err = hccl.NewGraph(c).Compile(ctx)
		if err != nil {
			return fmt.Errorf("empty graph: %w", err)
		}
		defer exe.Close()
		if err := exe.Run(ctx); err != nil || exe.Steps() != 0 {
			return fmt.Errorf("empty graph: Run %v, %d steps", err, exe.Steps())
		}
		return nil
	})
}

// TestGraphAfterCommClose: a replay on a closed communicator fails with
// ErrClosed, naming its collective, and sends nothing.
func TestGraphAfterCommClose(t *testing.T) {
	j := startJob(t, 2)
	ctx := ctxFor(t)
	exes := make([]*hccl.Executable, 2)
	j.must("compile", func(c *hccl.Comm) error {
		g := hccl.NewGraph(c)
		hccl.GraphAllReduce(g, make([]float32, 5), make([]float32, 5), hccl.Sum)
		var err error
		exes[c.Rank()], err = g.Compile(ctx)
		return err
	})
	j.must("close and run", func(c *hccl.Comm) error {
		if err := c.Close(); err != nil {
			return err
		}
		if err := exes[c.Rank()].Run(ctx); !errors.Is(err, hccl.ErrClosed) || !strings.Contains(err.Error(), "AllReduce") {
			return fmt.Errorf("Run after the communicator's Close: %v, want ErrClosed naming AllReduce", err)
		}
		return nil
	})
}

// TestGraphMergesScatterGather: a ReduceScatter followed by the
// AllGather of its result compiles to one AllReduce where every rank's
// buffers allow it, and stays two collectives where one rank's do not;
// the results are those of the calls (checkGraph).
func TestGraphMergesScatterGather(t *testing.T) {
	const n = 3
	j := startJob(t, n)
	ctx := ctxFor(t)
	for _, tc := range []struct {
		alias, steps int
	}{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {-1, 2}} {
		prog := []gNode{{kind: gScatterGather, count: 1000, op: hccl.Sum, alias: tc.alias}}
		checkGraph[float32](t, j, prog, -1, false)
		j.must(fmt.Sprintf("alias %d", tc.alias), func(c *hccl.Comm) error {
			g := hccl.NewGraph(c)
			if err := apply(ctx, c, g, prog, newGBufs[float32](prog, c.Rank(), n)); err != nil {
				return err
			}
			exe, err := g.Compile(ctx)
			if err != nil {
				return err
			}
			defer exe.Close()
			if exe.Steps() != tc.steps {
				return fmt.Errorf("alias %d: %d steps, want %d", tc.alias, exe.Steps(), tc.steps)
			}
			return nil
		})
	}
}

// TestGraphAfterSetAlgo: a graph compiled under one policy and replayed
// after SetAlgo changed it runs the new policy's algorithms, with the
// results of the calls made under it.
func TestGraphAfterSetAlgo(t *testing.T) {
	const n = 4
	j := startJob(t, n)
	prog := []gNode{{kind: gAllReduce, count: 100000, op: hccl.Sum}, {kind: gAllGather, count: 5000},
		{kind: gBroadcast, count: 3000, root: 1}}
	var before, after []string
	checkGraphThen[int32](t, j, prog, -1, false, func(c *hccl.Comm, exe *hccl.Executable) error {
		if c.Rank() == 0 {
			before = hccl.StepAlgos(exe)
		}
		return c.SetAlgo("ring")
	})
	j.must("algorithms", func(c *hccl.Comm) error {
		defer c.SetAlgo("")
		g := hccl.NewGraph(c)
		bufs := newGBufs[int32](prog, c.Rank(), n)
		if err := apply(ctxFor(t), c, g, prog, bufs); err != nil {
			return err
		}
		if err := c.SetAlgo(""); err != nil {
			return err
		}
		exe, err := g.Compile(ctxFor(t))
		if err != nil {
			return err
		}
		defer exe.Close()
		if err := c.SetAlgo("ring"); err != nil {
			return err
		}
		if err := exe.Run(ctxFor(t)); err != nil {
			return err
		}
		if c.Rank() == 0 {
			after = hccl.StepAlgos(exe)
		}
		return nil
	})
	for i, a := range after {
		if !strings.HasPrefix(a, "ring") {
			t.Errorf("step %d: bound to %q after SetAlgo(ring), want ring (before: %q)", i, a, before[i])
		}
	}
	t.Logf("before %v, after %v", before, after)
}

// TestGraphDependentAllReduces: AllReduces that read what an earlier one
// of a run wrote (the same buffer reduced twice in place, a result fed to
// the next call) give the results of the calls made one by one: a bucket
// must not copy in an input before the call that writes it ran.
func TestGraphDependentAllReduces(t *testing.T) {
	const n = 3
	j := startJob(t, n)
	ctx := ctxFor(t)
	j.must("dependent", func(c *hccl.Comm) error {
		type bufs struct{ x, a, b, d []int32 }
		mk := func() bufs {
			bb := bufs{make([]int32, 10), make([]int32, 20), make([]int32, 20), make([]int32, 20)}
			for i := range bb.x {
				bb.x[i] = int32(c.Rank() + i)
			}
			for i := range bb.a {
				bb.a[i] = int32(2*c.Rank() + i)
			}
			return bb
		}
		record := func(g *hccl.Graph, b bufs) error {
			return errors.Join(
				hccl.GraphAllReduce(g, b.x, b.x, hccl.Sum),
				hccl.GraphAllReduce(g, b.x, b.x, hccl.Sum),
				hccl.GraphAllReduce(g, b.a, b.b, hccl.Sum),
				hccl.GraphAllReduce(g, b.b, b.d, hccl.Max),
				hccl.GraphAllReduce(g, b.b, b.d, hccl.Max))
		}
		calls := func(b bufs) error {
			return errors.Join(
				hccl.AllReduce(ctx, c, b.x, b.x, hccl.Sum),
				hccl.AllReduce(ctx, c, b.x, b.x, hccl.Sum),
				hccl.AllReduce(ctx, c, b.a, b.b, hccl.Sum),
				hccl.AllReduce(ctx, c, b.b, b.d, hccl.Max),
				hccl.AllReduce(ctx, c, b.b, b.d, hccl.Max))
		}
		gb, db := mk(), mk()
		g := hccl.NewGraph(c)
		if err := record(g, gb); err != nil {
			return err
		}
		exe, err := g.Compile(ctx)
		if err != nil {
			return err
		}
		defer exe.Close()
		if err := exe.Run(ctx); err != nil {
			return err
		}
		if err := calls(db); err != nil {
			return err
		}
		for _, p := range [][2][]int32{{gb.x, db.x}, {gb.b, db.b}, {gb.d, db.d}} {
			if err := sameBits(p[0], p[1]); err != nil {
				return fmt.Errorf("%d steps: %w", exe.Steps(), err)
			}
		}
		// x alone; x again with a into b; b into d twice (Max).
		if exe.Steps() != 3 {
			return fmt.Errorf("%d steps, want 3: the independent calls fuse still", exe.Steps())
		}
		return nil
	})
}

// TestGraphAliasingDiffersByRank: where one rank's AllReduces depend on
// each other (the same buffer twice) and another's do not, every rank
// buckets alike (the dependent rank's break holds for all), so the
// replay makes the same collectives everywhere and gives the results of
// the calls.
func TestGraphAliasingDiffersByRank(t *testing.T) {
	const n = 3
	j := startJob(t, n)
	ctx := ctxFor(t)
	steps := make([]int, n)
	j.must("aliasing", func(c *hccl.Comm) error {
		run := func(g *hccl.Graph, x, y []int32) error {
			if g != nil {
				return errors.Join(hccl.GraphAllReduce(g, x, x, hccl.Sum), hccl.GraphAllReduce(g, y, y, hccl.Sum))
			}
			return errors.Join(hccl.AllReduce(ctx, c, x, x, hccl.Sum), hccl.AllReduce(ctx, c, y, y, hccl.Sum))
		}
		bufs := func() (x, y []int32) {
			x = []int32{int32(c.Rank()), 1, 2, 3}
			y = x // rank 0 reduces x twice
			if c.Rank() != 0 {
				y = []int32{int32(c.Rank()), 5, 6, 7}
			}
			return x, y
		}
		gx, gy := bufs()
		dx, dy := bufs()
		g := hccl.NewGraph(c)
		if err := run(g, gx, gy); err != nil {
			return err
		}
		exe, err := g.Compile(ctx)
		if err != nil {
			return err
		}
		defer exe.Close()
		steps[c.Rank()] = exe.Steps()
		if err := exe.Run(ctx); err != nil {
			return err
		}
		if err := run(nil, dx, dy); err != nil {
			return err
		}
		return errors.Join(sameBits(gx, dx), sameBits(gy, dy))
	})
	for r, s := range steps {
		if s != 2 {
			t.Errorf("rank %d: %d steps, want 2 on every rank", r, s)
		}
	}
}

// TestGraphFuseBytesDiffer: ranks that would bucket with different caps
// fail Compile with ErrMismatch, every one of them, naming both caps.
func TestGraphFuseBytesDiffer(t *testing.T) {
	const n = 3
	j := startJob(t, n)
	ctx := ctxFor(t)
	errs := j.each(func(c *hccl.Comm) error {
		g := hccl.NewGraph(c)
		if c.Rank() == 1 {
			g.FuseBytes = 4096
		}
		hccl.GraphAllReduce(g, make([]float32, 10), make([]float32, 10), hccl.Sum)
		return compileOnly(ctx, g)
	})
	for r, err := range errs {
		if !errors.Is(err, hccl.ErrMismatch) || !strings.Contains(err.Error(), "up to 4096") {
			t.Errorf("rank %d: Compile: %v, want ErrMismatch naming the cap 4096", r, err)
		}
	}
	j.t = t
	j.must("barrier", func(c *hccl.Comm) error { return c.Barrier(ctx) })
}

// TestGraphRecordingFailsOnOneRank: a recording call that fails on one
// rank alone fails every rank's Compile at once, rather than leave the
// others waiting: that rank with its own error, naming the recording
// call, the others with ErrInvalidArgument naming it; the communicator
// stays usable.
func TestGraphRecordingFailsOnOneRank(t *testing.T) {
	const n = 3
	j := startJob(t, n)
	ctx := ctxFor(t)
	errs := j.each(func(c *hccl.Comm) error {
		g := hccl.NewGraph(c)
		hccl.GraphAllReduce(g, make([]float32, 4), make([]float32, 4), hccl.Sum)
		recv := 4
		if c.Rank() == 1 {
			recv = 5
		}
		hccl.GraphAllReduce(g, make([]float32, 4), make([]float32, recv), hccl.Sum)
		return compileOnly(ctx, g)
	})
	for r, err := range errs {
		want := "rank 1's recording of graph node 1 failed"
		if r == 1 {
			want = "graph node 1: hccl: GraphAllReduce rank 1"
		}
		if !errors.Is(err, hccl.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("rank %d: Compile: %v, want ErrInvalidArgument with %q", r, err, want)
		}
	}
	j.t = t
	j.must("barrier", func(c *hccl.Comm) error { return c.Barrier(ctx) })
}

// compileOnly compiles g for its error, closing what it made.
func compileOnly(ctx context.Context, g *hccl.Graph) error {
	exe, err := g.Compile(ctx)
	if err == nil {
		exe.Close()
	}
	return err
}

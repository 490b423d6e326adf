package executor

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// recorder is a Tracer that keeps what it is told.
type recorder struct {
	mu  sync.Mutex
	ops []string
	bad []string
}

func (r *recorder) Op(call *Call, step int, op *plan.Op, bytes int, start, end, wait int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, fmt.Sprintf("#%d step %d %s peer %d %dB", call.Seq, step, op.Kind, op.Peer, bytes))
	if start > end || wait < 0 || wait > end-start || start <= 0 {
		r.bad = append(r.bad, fmt.Sprintf("step %d %s: start %d end %d wait %d", step, op.Kind, start, end, wait))
	}
}

// TestTraceEveryOp: over real shared memory, ring, rhd and one-shot
// AllReduce plans at np 2 (the pair step), 3 and 4, small and several
// segments long, tell the Tracer of every op of the plan exactly once,
// with its step, peer and bytes, and times in order; Where holds the
// call's collective and a peer of the rank's last step afterwards. With
// Call.TraceWhole, the small one-shot at np 2 (and only it) reports no
// op and leaves them to PairOps, which lists the same ops.
func TestTraceEveryOp(t *testing.T) {
	for _, name := range []string{"ring", "rhd", "oneshot"} {
		for _, n := range []int{2, 3, 4} {
			for _, count := range []int{2, 3000} {
				for _, whole := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/np%d/%d/whole=%v", name, n, count, whole), func(t *testing.T) {
						ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
						defer cancel()
						a, _ := algo.Lookup(name)
						links := shmMesh(t, ctx, n)
						recs := make([]*recorder, n)
						wheres := make([]atomic.Uint64, n)
						plans := make([]*plan.Plan, n)
						execs := make([]*Executor, n)
						errs := make(chan error, n)
						for r := range n {
							p, err := a.Build(plan.Request{Coll: plan.AllReduce, Count: count, Rank: r, Size: n})
							if err != nil {
								t.Skip(err)
							}
							plans[r] = p
							recs[r] = &recorder{}
							e := New(r, links[r], Config{SegmentBytes: 4 << 10, Trace: recs[r], Where: &wheres[r]})
							defer e.Close()
							execs[r] = e
							buf := make([]byte, 4*count)
							go func() {
								errs <- e.Run(ctx, p, Call{Seq: 7, Desc: wire.Call{Coll: uint8(plan.AllReduce), Count: uint64(count)}, ElemSize: 4, Kernel: sumInt32,
									TraceStart: TraceNow(), TraceWhole: whole},
									Buffers{Send: buf, Recv: make([]byte, len(buf))})
							}()
						}
						for range n {
							if err := <-errs; err != nil {
								t.Fatal(err)
							}
						}
						for r := range n {
							var want []string
							for i, s := range plans[r].Steps {
								for _, op := range s.Ops {
									reg := op.Dst
									if op.Kind == plan.OpSend {
										reg = op.Src
									}
									want = append(want, fmt.Sprintf("#7 step %d %s peer %d %dB", i, op.Kind, op.Peer, 4*reg.Len))
								}
							}
							got := recs[r].ops
							pair := name == "oneshot" && n == 2 && count == 2
							if traced := execs[r].PairTraced(); traced != (whole && pair) {
								t.Errorf("rank %d: PairTraced %v", r, traced)
							} else if traced {
								if len(got) > 0 {
									t.Errorf("rank %d: a whole pair call reported %v", r, got)
								}
								for _, op := range PairOps(nil, plans[r], 4) {
									got = append(got, fmt.Sprintf("#7 step %d %s peer %d %dB", op.Step, op.Op.Kind, op.Op.Peer, op.Bytes))
									if op.When == 0 {
										t.Errorf("rank %d: %s placed nowhere", r, op.Op)
									}
								}
							}
							sort.Strings(want)
							sort.Strings(got)
							if fmt.Sprint(got) != fmt.Sprint(want) {
								t.Errorf("rank %d traced\n%v\nwant the plan's ops\n%v", r, got, want)
							}
							if len(recs[r].bad) > 0 {
								t.Errorf("rank %d: times out of order: %v", r, recs[r].bad)
							}
							w := wire.Where(wheres[r].Load())
							if coll, ok := w.Coll(); !ok || coll != uint8(plan.AllReduce) || w.Peer() < 0 || w.Peer() >= n || w.Peer() == r {
								t.Errorf("rank %d: where %#x (coll %d, step %d, peer %d)", r, uint64(w), coll, w.Step(), w.Peer())
							}
						}
					})
				}
			}
		}
	}
}

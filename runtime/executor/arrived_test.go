package executor

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// meshLinks are one rank's Links in a job whose ranks all run in this
// process, over real shared-memory links.
type meshLinks map[int]transport.Link

func (m meshLinks) Link(_ context.Context, peer int) (transport.Link, error) {
	if l, ok := m[peer]; ok {
		return l, nil
	}
	return nil, fmt.Errorf("no link to rank %d", peer)
}

func (m meshLinks) Open(peer int) transport.Link { return m[peer] }

// shmMesh links every pair of n ranks.
func shmMesh(t *testing.T, ctx context.Context, n int) []meshLinks {
	t.Helper()
	m := make([]meshLinks, n)
	for i := range m {
		m[i] = meshLinks{}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			m[i][j], m[j][i] = shmPair(t, ctx, 0, false)
		}
	}
	return m
}

// TestStepTakesArrived runs one step of an all-to-all exchange among four
// ranks (each sends its block to every peer and receives theirs) over real
// shm links and checks every block, and that the receives ran where they
// should: small ones all on the calling goroutine when the poll is long
// enough for every peer to arrive (no worker started), the ones still
// missing on workers when peers come after the poll has ended, and
// receives of several frames, which may wait in the middle of a transfer,
// never in the poll.
func TestStepTakesArrived(t *testing.T) {
	const n, seg = 4, 1 << 10
	for _, tt := range []struct {
		name    string
		block   int
		poll    Poll
		late    time.Duration               // ranks n-2 and n-1 start this much later
		workers func(rank int) (lo, hi int) // how many workers the rank may start
	}{
		{"small, all arrive in the poll", 8, Poll{Spin: 20 * time.Second}, 0, func(int) (int, int) { return 0, 0 }},
		{"empty, all arrive in the poll", 0, Poll{Spin: 20 * time.Second}, 0, func(int) (int, int) { return 0, 0 }},
		{"small, two peers after the poll", 8, Poll{Spin: time.Millisecond, Yield: time.Millisecond, YieldProcessor: func() {}}, 200 * time.Millisecond,
			func(r int) (int, int) {
				if r >= n-2 {
					return 0, n - 2 // they may find everything there already, or not
				}
				// The late peers' receives are left to runTasks, one on
				// the caller and one on a worker; on a loaded machine the
				// other early peer's may be missing too.
				return 1, n - 2
			}},
		{"several frames each", 3*seg + 8, Poll{Spin: 20 * time.Second}, 0, func(int) (int, int) { return n - 2, n - 2 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			links := shmMesh(t, ctx, n)
			bufs := make([]Buffers, n)
			execs := make([]*Executor, n)
			errs := make(chan error, n)
			for r := range n {
				bufs[r] = Buffers{Send: make([]byte, tt.block), Recv: make([]byte, n*tt.block)}
				for i := range bufs[r].Send {
					bufs[r].Send[i] = byte(r*31 + i)
				}
				var ops []plan.Op
				for q := range n {
					if q != r {
						ops = append(ops,
							plan.Op{Kind: plan.OpSend, Peer: q, Src: plan.Region{Buf: plan.BufSend, Len: tt.block}},
							plan.Op{Kind: plan.OpRecv, Peer: q, Dst: plan.Region{Buf: plan.BufRecv, Off: q * tt.block, Len: tt.block}})
					}
				}
				p := &plan.Plan{Coll: plan.AlltoAll, Rank: r, Size: n, Steps: []plan.Step{{Ops: ops}}}
				execs[r] = New(r, links[r], Config{SegmentBytes: seg, Poll: tt.poll})
				defer execs[r].Close()
				go func() {
					if r >= n-2 {
						time.Sleep(tt.late)
					}
					errs <- execs[r].Run(ctx, p, Call{Seq: 1, Desc: wire.Call{Count: uint64(tt.block)}, ElemSize: 1}, bufs[r])
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			for r := range n {
				for q := range n {
					if got := bufs[r].Recv[q*tt.block : (q+1)*tt.block]; q != r && !bytes.Equal(got, bufs[q].Send) {
						t.Errorf("rank %d got %v from rank %d, want %v", r, got, q, bufs[q].Send)
					}
				}
				if lo, hi := tt.workers(r); len(execs[r].workers) < lo || len(execs[r].workers) > hi {
					t.Errorf("rank %d started %d workers, want %d to %d", r, len(execs[r].workers), lo, hi)
				}
			}
		})
	}
}

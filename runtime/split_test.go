package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// splitTransports are the transports the Split tests run over.
var splitTransports = []struct {
	name string
	opts []hccl.Option
}{{"shm", nil}, {"tcp", []hccl.Option{hccl.WithShmDisabled(true)}}}

// splitAll calls Split(color(r), key(r)) on every rank r of j and returns
// the children by rank of j (nil where a rank opted out).
func splitAll(t *testing.T, ctx context.Context, comms []*hccl.Comm, color, key func(r int) int) []*hccl.Comm {
	t.Helper()
	kids := make([]*hccl.Comm, len(comms))
	j := &testJob{t: t, comms: comms}
	j.must("Split", func(c *hccl.Comm) error {
		k, err := c.Split(ctx, color(c.Rank()), key(c.Rank()))
		kids[c.Rank()] = k
		return err
	})
	t.Cleanup(func() {
		for _, k := range kids {
			if k != nil {
				k.Close()
			}
		}
	})
	return kids
}

// groups collects children into jobs, one per communicator, each with its
// comms in the child's rank order; member(r) names the child of rank r.
func groups(t *testing.T, kids []*hccl.Comm, member func(r int) int) []*testJob {
	var out []*testJob
	for r, k := range kids {
		if k == nil {
			continue
		}
		g := member(r)
		for len(out) <= g {
			out = append(out, &testJob{t: t})
		}
		out[g].comms = append(out[g].comms, k)
	}
	for _, j := range out {
		slices.SortFunc(j.comms, func(a, b *hccl.Comm) int { return a.Rank() - b.Rank() })
		for i, c := range j.comms {
			if c.Rank() != i || c.Size() != len(j.comms) {
				t.Fatalf("child ranks %d of %d, want %d of %d", c.Rank(), c.Size(), i, len(j.comms))
			}
		}
	}
	return out
}

// checkSplitGroup runs every collective on j, checked exactly, plus a
// ring of Send/Recv.
func checkSplitGroup(t *testing.T, j *testJob) {
	j.t = t
	counts := []int{0, 1, 7, 1000, 100003}
	checkType[int32](t, j, counts)
	checkType[float32](t, j, counts[:4])
	checkType[hccl.BFloat16](t, j, counts[:4])
	ctx := ctxFor(t)
	n := len(j.comms)
	if n < 2 {
		return
	}
	// A Comm runs one call at a time: even ranks send first, odd ranks
	// receive first, so that the ring has no cycle of waits.
	j.must("Send/Recv ring", func(c *hccl.Comm) error {
		next, prev := (c.Rank()+1)%n, (c.Rank()+n-1)%n
		send := fill[int64](hccl.Sum, c.Rank(), 513)
		recv := make([]int64, 513)
		first, second := func() error { return hccl.Send(ctx, c, send, next) }, func() error { return hccl.Recv(ctx, c, recv, prev) }
		if c.Rank()%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		return sameBits(recv, fill[int64](hccl.Sum, prev, 513))
	})
}

// TestSplitGrid: a 2x3 grid of 6 ranks split by row (color r/3, keys
// tied: numbered by parent rank) and by column (color r%3, key -r: the
// job's order reversed); every collective runs on both rows, the three
// columns and the parent at once, each from its own goroutines, checked
// exactly, over shm and over TCP.
func TestSplitGrid(t *testing.T) {
	for _, tr := range splitTransports {
		t.Run(tr.name, func(t *testing.T) {
			j := startJob(t, 6, tr.opts...)
			ctx := ctxFor(t)
			rows := splitAll(t, ctx, j.comms, func(r int) int { return r / 3 }, func(int) int { return 0 })
			cols := splitAll(t, ctx, j.comms, func(r int) int { return r % 3 }, func(r int) int { return -r })
			for r := range 6 {
				if got, want := rows[r].Rank(), r%3; got != want || rows[r].Size() != 3 {
					t.Fatalf("rank %d: row rank %d of %d, want %d of 3", r, got, rows[r].Size(), want)
				}
				if got, want := cols[r].Rank(), 1-r/3; got != want || cols[r].Size() != 2 {
					t.Fatalf("rank %d: column rank %d of %d, want %d of 2", r, got, cols[r].Size(), want)
				}
				if rows[r].LocalSize() != 3 || rows[r].LocalRank() != r%3 {
					t.Errorf("rank %d: row local rank %d of %d, want %d of 3", r, rows[r].LocalRank(), rows[r].LocalSize(), r%3)
				}
			}
			all := []*testJob{{t: t, comms: j.comms}}
			all = append(all, groups(t, rows, func(r int) int { return r / 3 })...)
			all = append(all, groups(t, cols, func(r int) int { return r % 3 })...)
			names := []string{"parent", "row0", "row1", "col0", "col1", "col2"}
			t.Run("concurrent", func(t *testing.T) {
				for i, g := range all {
					t.Run(names[i], func(t *testing.T) {
						t.Parallel()
						checkSplitGroup(t, g)
					})
				}
			})
			// A child's topology and links are in its own numbering.
			topo, err := cols[0].Topology(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(topo.Servers) != 1 || !slices.Equal(topo.Servers[0], []int{0, 1}) {
				t.Errorf("column topology %v, want one server of ranks 0 and 1", topo.Servers)
			}
			for _, l := range rows[4].Links() {
				if l.Peer < 0 || l.Peer >= 3 || l.Peer == 1 {
					t.Errorf("row link to peer %d, want a peer of ranks 0..2 but 1", l.Peer)
				}
			}
		})
	}
}

// TestSplitOptOutAndNested: a negative color returns nil, nil; a child
// splits again; children run on after the parent closes.
func TestSplitOptOutAndNested(t *testing.T) {
	j := startJob(t, 5)
	ctx := ctxFor(t)
	// Ranks 0..3 join, rank 4 opts out.
	kids := splitAll(t, ctx, j.comms, func(r int) int {
		if r == 4 {
			return -1
		}
		return 0
	}, func(r int) int { return 10 - r })
	if kids[4] != nil {
		t.Fatalf("rank 4 opted out but got a communicator")
	}
	k := groups(t, kids, func(int) int { return 0 })[0]
	if got := len(k.comms); got != 4 {
		t.Fatalf("child of %d ranks, want 4", got)
	}
	// The child's rank 0 is the job's rank 3 (key 7, the smallest).
	if kids[3].Rank() != 0 || kids[0].Rank() != 3 {
		t.Fatalf("child ranks %d and %d for job ranks 3 and 0, want 0 and 3", kids[3].Rank(), kids[0].Rank())
	}
	// The grandchildren: child ranks split by parity.
	grand := splitAll(t, ctx, k.comms, func(r int) int { return r % 2 }, func(r int) int { return r })
	gs := groups(t, grand, func(r int) int { return r % 2 })
	if len(gs) != 2 || len(gs[0].comms) != 2 || len(gs[1].comms) != 2 {
		t.Fatalf("grandchildren %v", gs)
	}
	// The parent closes; the children go on.
	for _, c := range j.comms {
		if err := c.Close(); err != nil {
			t.Fatalf("close the parent: %v", err)
		}
	}
	t.Run("child", func(t *testing.T) { checkSplitGroup(t, k) })
	t.Run("grandchild", func(t *testing.T) { checkSplitGroup(t, gs[1]) })
}

// TestSplitLayout: a child's server layout is its parent's restricted to
// its ranks: on servers of 3, the columns of a 2x3 grid hold one rank on
// each of two servers and run the hierarchical algorithms across them,
// the rows a server each.
func TestSplitLayout(t *testing.T) {
	j := newJobPerServer(t, 6, 3)
	j.t = t
	ctx := ctxFor(t)
	cols := splitAll(t, ctx, j.comms, func(r int) int { return r % 3 }, func(r int) int { return r })
	rows := splitAll(t, ctx, j.comms, func(r int) int { return r / 3 }, func(r int) int { return r })
	for _, g := range append(groups(t, cols, func(r int) int { return r % 3 }), groups(t, rows, func(r int) int { return r / 3 })...) {
		checkType[int32](t, g, []int{1, 1000})
	}
}

// TestSplitAbort: Abort on a child breaks the parent and the sibling
// children, on every rank, at once, with the reason.
func TestSplitAbort(t *testing.T) {
	for _, tr := range splitTransports {
		t.Run(tr.name, func(t *testing.T) {
			j := startJob(t, 6, tr.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rows := splitAll(t, ctx, j.comms, func(r int) int { return r / 3 }, func(r int) int { return r })
			reason := errors.New("the loader failed")
			// Rank 4 (rank 1 of row 1) aborts while every rank waits:
			// ranks 0, 3 and 5 in the parent, 1 and 2 in row 0 (for rank
			// 0), rank 4 itself in row 1 (for ranks 3 and 5).
			go func() {
				time.Sleep(200 * time.Millisecond)
				rows[4].Abort(reason)
			}()
			start := time.Now()
			errs := j.each(func(c *hccl.Comm) error {
				switch c.Rank() {
				case 0, 3, 5:
					return allReduceF32(1<<16, hccl.Sum)(ctx, c)
				default:
					return allReduceF32(1<<16, hccl.Sum)(ctx, rows[c.Rank()])
				}
			})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the calls returned %v after they started", took)
			}
			check := func(r int, what string, err error) {
				if !errors.Is(err, hccl.ErrAborted) || !strings.Contains(err.Error(), "rank 4 (rank 1 of communicator") ||
					!strings.Contains(err.Error(), reason.Error()) {
					t.Errorf("rank %d's %s: %v, want ErrAborted naming rank 4 and the reason", r, what, err)
				}
			}
			for r, err := range errs {
				check(r, "running call", err)
			}
			for r := range 6 {
				for what, c := range map[string]*hccl.Comm{"parent": j.comms[r], "row": rows[r]} {
					check(r, what+" after the abort", c.Barrier(ctx))
				}
			}
		})
	}
}

// TestSplitMismatch: a rank that calls a collective where the others call
// Split fails them with ErrMismatch, naming the Split, and nobody hangs.
func TestSplitMismatch(t *testing.T) {
	j := startJob(t, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errs := j.each(func(c *hccl.Comm) error {
		if c.Rank() == 2 {
			return allReduceF32(5, hccl.Sum)(ctx, c)
		}
		k, err := c.Split(ctx, 0, 0)
		if k != nil {
			k.Close()
		}
		return err
	})
	mismatched := 0
	for r, err := range errs {
		switch {
		case err == nil:
			t.Errorf("rank %d: no error", r)
		case errors.Is(err, hccl.ErrMismatch):
			mismatched++
			if r != 2 && !strings.HasPrefix(err.Error(), "hccl: Split") {
				t.Errorf("rank %d: %v does not name the Split", r, err)
			}
		case !errors.Is(err, hccl.ErrAborted):
			t.Errorf("rank %d: %v, want ErrMismatch or ErrAborted", r, err)
		}
		t.Logf("rank %d: %v", r, err)
	}
	if mismatched == 0 {
		t.Errorf("no rank reported ErrMismatch")
	}
}

// TestSplitIDs: a child's id is a function of its parent's and the
// parent's count of splits, distinct across splits.
func TestSplitIDs(t *testing.T) {
	j := startJob(t, 2)
	ctx := ctxFor(t)
	var names []string
	for range 3 {
		kids := splitAll(t, ctx, j.comms, func(int) int { return 0 }, func(int) int { return 0 })
		names = append(names, fmt.Sprint(kids[0].Rank(), kids[1].Rank()))
		checkType[int32](t, groups(t, kids, func(int) int { return 0 })[0], []int{7})
	}
	if !slices.Equal(names, []string{"0 1", "0 1", "0 1"}) {
		t.Errorf("ranks %v", names)
	}
}

// TestSplitExecTimeout: HCCL_EXEC_TIMEOUT bounds a child's calls; the
// error names the child and says its ranks are alive (the heartbeats
// count the job's communicator's calls, not the child's).
func TestSplitExecTimeout(t *testing.T) {
	j := startJob(t, 6, hccl.WithExecTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rows := splitAll(t, ctx, j.comms, func(r int) int { return r / 3 }, func(r int) int { return r })
	start := time.Now()
	errs := j.each(func(c *hccl.Comm) error {
		if c.Rank() != 0 && c.Rank() != 1 {
			return nil // rank 2 never joins row 0's call
		}
		return allReduceF32(1<<10, hccl.Sum)(ctx, rows[c.Rank()])
	})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the calls returned after %v", took)
	}
	timedOut := 0
	for r, err := range errs[:2] {
		switch {
		case errors.Is(err, hccl.ErrTimeout):
			timedOut++
			if !strings.Contains(err.Error(), "communicator 0x") || !strings.Contains(err.Error(), "job ranks [0 1 2]") {
				t.Errorf("rank %d: %v does not name the communicator and its ranks", r, err)
			}
		case !errors.Is(err, hccl.ErrAborted):
			t.Errorf("rank %d: %v, want ErrTimeout or ErrAborted", r, err)
		}
		t.Logf("rank %d: %v", r, err)
	}
	if timedOut == 0 {
		t.Errorf("no rank timed out")
	}
}

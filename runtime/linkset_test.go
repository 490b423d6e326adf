package runtime

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio/control"
	"github.com/hcclrun/hcclrun/runtime/topo"
)

// boards starts a control server and one switchboard per rank of a job
// of n, over shared memory or, with tcpOnly, TCP alone.
func boards(t *testing.T, n int, tcpOnly bool) []*switchboard {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	key, err := wire.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := control.NewServer(control.ServerConfig{Addr: "127.0.0.1:0", Key: key, Size: n, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ctx) }()
	t.Cleanup(func() { srv.Close(); <-served })
	knobs, err := knobsFromEnv(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	knobs.ShmDisable = tcpOnly
	jobID := "test-" + wire.EncodeKey(key[:6])
	out := make([]*switchboard, n)
	for r := range n {
		job := Job{Rank: r, Size: n, LocalRank: r, LocalSize: n, ControlAddr: srv.Addr(), JobID: jobID, Key: key}
		ctl, err := control.Dial(ctx, srv.Addr(), key, r, n, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ctl.Close() })
		facts, err := topo.Gather(r)
		if err != nil {
			t.Fatal(err)
		}
		b, err := newSwitchboard(ctx, job, knobs, "127.0.0.1", facts, 0, ctl, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.close() })
		out[r] = b
	}
	return out
}

// TestLinkSetsShareTheListeners opens two link sets over one job's
// switchboards, whose members are numbered in different orders, and
// checks that every frame arrives on the set it was sent on, also when a
// rank makes its side of a set only after its peers dialled it.
func TestLinkSetsShareTheListeners(t *testing.T) {
	for _, tcpOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("tcpOnly=%v", tcpOnly), func(t *testing.T) {
			const n = 3
			bs := boards(t, n, tcpOnly)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			// Set A holds the job's ranks in order; set B reversed, so
			// that the rank that dials in B is the one that accepts in A.
			orders := map[uint32][]int{linkTag(0, 0): {0, 1, 2}, linkTag(7, 1): {2, 1, 0}}
			sets := make(map[uint32][]*linkSet)
			for tag, members := range orders {
				sets[tag] = make([]*linkSet, n)
				for i, r := range members {
					if r == 2 && tag == linkTag(7, 1) {
						continue // made after the others sent (below)
					}
					s, err := newLinkSet(bs[r], tag, members, i)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.close() })
					sets[tag][i] = s
				}
			}
			// In B, rank 2 of the job is the set's rank 0: the others dial
			// it and send before it has made the set, whose links then wait
			// on its switchboard, unclaimed.
			var wg sync.WaitGroup
			errs := make(chan error, 2*n*n)
			send := func(tag uint32, from, to int) {
				defer wg.Done()
				l, err := sets[tag][from].Link(ctx, to)
				if err != nil {
					errs <- fmt.Errorf("tag %#x: %d->%d: %w", tag, from, to, err)
					return
				}
				h := wire.Header{Seq: uint64(tag), Src: uint32(from), Len: 1}
				if err := l.Send(ctx, &h, []byte{byte(to)}); err != nil {
					errs <- fmt.Errorf("tag %#x: %d->%d: send: %w", tag, from, to, err)
				}
			}
			for tag, ss := range sets {
				for from := range ss {
					for to := range ss {
						if from != to && ss[from] != nil {
							wg.Add(1)
							go send(tag, from, to)
						}
					}
				}
			}
			late := linkTag(7, 1)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				bs[2].mu.Lock()
				parked := len(bs[2].unclaimed[late])
				bs[2].mu.Unlock()
				if parked == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d links wait unclaimed for the late set, want 2", parked)
				}
			}
			s, err := newLinkSet(bs[2], late, orders[late], 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.close() })
			sets[late][0] = s
			if _, err := newLinkSet(bs[2], late, orders[late], 0); err == nil {
				t.Error("a second set with a tag already taken was made")
			}
			for _, to := range []int{1, 2} {
				wg.Add(1)
				go send(late, 0, to)
			}
			for tag, ss := range sets {
				for to, s := range ss {
					for from := range ss {
						if from == to {
							continue
						}
						l, err := s.Link(ctx, from)
						if err != nil {
							t.Fatalf("tag %#x: %d<-%d: %v", tag, to, from, err)
						}
						var h wire.Header
						b := make([]byte, 1)
						if err := l.RecvHeader(ctx, &h); err != nil || l.RecvPayload(ctx, b) != nil {
							t.Fatalf("tag %#x: %d<-%d: receive: %v", tag, to, from, err)
						}
						if h.Seq != uint64(tag) || h.Src != uint32(from) || b[0] != byte(to) {
							t.Errorf("tag %#x: rank %d got from rank %d a frame of tag %#x from %d for %d", tag, to, from, h.Seq, h.Src, b[0])
						}
					}
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/syncbuf"
	hccl "github.com/hcclrun/hcclrun/runtime"
	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// channelCounts are the counts of the channel tests: none, fewer than the
// channels, odd ones that no channel count divides, and a large one.
var channelCounts = []int{0, 1, 2, 3, 7, 1001, 100003}

// TestChannelsMatrix runs the matrix (every collective, checked bit for
// bit against the naive reference) with 1 to 4 channels forced, over
// shared memory and TCP, at 2, 3 and 5 ranks: AllReduce, Broadcast and
// Reduce run split over the channels, the others on one.
func TestChannelsMatrix(t *testing.T) {
	types := []typeCheck{matrixTypes[0], matrixTypes[8], matrixTypes[11]} // int8, float16, float64
	for _, tr := range []string{"shm", "tcp"} {
		for nc := 1; nc <= 4; nc++ {
			for _, n := range []int{2, 3, 5} {
				t.Run(fmt.Sprintf("%s/c%d/np%d", tr, nc, n), func(t *testing.T) {
					j := startJob(t, n, hccl.WithChannels(nc, nc), hccl.WithShmDisabled(tr == "tcp"))
					runMatrixOn(t, j, types, channelCounts)
					if n > 1 {
						for r, c := range j.comms {
							if got := hccl.ChannelsOpen(c); got != nc-1 {
								t.Errorf("rank %d opened %d channels beyond the first, want %d", r, got, nc-1)
							}
						}
					}
				})
			}
		}
	}
}

// TestChannelsEveryAlgorithm: each algorithm of the split collectives,
// forced for those it serves, on 3 channels (shares of unequal sizes),
// over shm and TCP.
func TestChannelsEveryAlgorithm(t *testing.T) {
	types := []typeCheck{matrixTypes[4], matrixTypes[10]} // int32, float32
	for _, a := range algo.All() {
		served, ok := a.(algo.Collectives)
		if !ok {
			continue
		}
		var spec []string
		for _, c := range served.Colls() {
			if selector.Channelled(c) {
				spec = append(spec, strings.ToLower(c.String())+":"+a.Name())
			}
		}
		if len(spec) == 0 {
			continue
		}
		n, per := 5, 0
		if a.Name() == "hier" {
			n, per = 6, 3
		}
		for _, tr := range []string{"shm", "tcp"} {
			t.Run(a.Name()+"/"+tr, func(t *testing.T) {
				j := newJobPerServer(t, n, per, hccl.WithChannels(3, 3), hccl.WithShmDisabled(tr == "tcp"), hccl.WithAlgo(strings.Join(spec, ";")))
				j.t = t
				runMatrixOn(t, j, types, []int{2, 7, 1000, 30001})
			})
		}
	}
}

// TestChannelsLogged: the selector's line at INFO says how many channels
// a call runs on, and the count follows the bounds.
func TestChannelsLogged(t *testing.T) {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	j := startJob(t, 2, hccl.WithChannels(3, 3), hccl.WithLogger(log))
	ctx := ctxFor(t)
	j.must("AllReduce", func(c *hccl.Comm) error { return allReduceF32(1<<16, hccl.Sum)(ctx, c) })
	out := buf.String()
	if !strings.Contains(out, "coll=AllReduce") || !strings.Contains(out, "channels=3") {
		t.Fatalf("the log does not say channels=3 for the AllReduce:\n%s", out)
	}
	for r, c := range j.comms {
		if got := hccl.ChannelsOpen(c); got != 2 {
			t.Errorf("rank %d opened %d channels beyond the first, want 2", r, got)
		}
		var chans []int
		for _, l := range c.Links() {
			if l.Peer == 1-r {
				chans = append(chans, l.Channel)
			}
		}
		if !slices.Equal(chans, []int{0, 1, 2}) {
			t.Errorf("rank %d lists links to rank %d on channels %v, want [0 1 2]", r, 1-r, chans)
		}
	}
	// One channel again: the channels opened stay, unused.
	j.must("SetChannels", func(c *hccl.Comm) error { return c.SetChannels(1, 1) })
	j.must("AllReduce on one", func(c *hccl.Comm) error { return allReduceF32(1<<16, hccl.Sum)(ctx, c) })
	for _, bad := range [][2]int{{-1, 0}, {0, 17}, {3, 2}} {
		if err := j.comms[0].SetChannels(bad[0], bad[1]); err == nil {
			t.Errorf("SetChannels(%d, %d) is accepted", bad[0], bad[1])
		}
	}
}

// TestChannelFault: a link that fails on one channel of one rank ends
// the call on every rank, on every channel, with an error naming the
// rank; nothing waits until a timeout.
func TestChannelFault(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			j := startJob(t, 3, hccl.WithChannels(4, 4), hccl.WithShmDisabled(tr == "tcp"))
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			j.must("warm-up", func(c *hccl.Comm) error { return allReduceF32(1<<16, hccl.Sum)(ctx, c) })
			hccl.BreakChannel(j.comms[1], 2)
			start := time.Now()
			errs := j.each(func(c *hccl.Comm) error { return allReduceF32(1<<20, hccl.Sum)(ctx, c) })
			elapsed := time.Since(start)
			for r, err := range errs {
				var oe *hccl.OpError
				switch {
				case err == nil:
					t.Errorf("rank %d: the call succeeded over a broken channel", r)
				case !errors.As(err, &oe) || oe.Rank != r:
					t.Errorf("rank %d: %v, want an *OpError of rank %d", r, err, r)
				case r != 1 && !(errors.Is(err, hccl.ErrAborted) && strings.Contains(err.Error(), "rank 1")):
					t.Errorf("rank %d: %v, want ErrAborted naming rank 1", r, err)
				}
			}
			if elapsed > 5*time.Second {
				t.Errorf("the ranks took %v to fail", elapsed)
			}
			// The communicator stays aborted.
			if err := allReduceF32(8, hccl.Sum)(ctx, j.comms[0]); !errors.Is(err, hccl.ErrAborted) {
				t.Errorf("a later call: %v, want ErrAborted", err)
			}
			t.Logf("rank 1: %v\nrank 0: %v (after %v)", errs[1], errs[0], elapsed)
			closeAll(t, j, 10*time.Second)
		})
	}
}

package executor

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
)

// countedLink is the Links of a rank with one peer that counts the waiting
// lookups (Link): the general step makes one for each op it runs, the
// pair step none.
type countedLink struct {
	l       transport.Link
	lookups atomic.Int32
}

func (c *countedLink) Link(context.Context, int) (transport.Link, error) {
	c.lookups.Add(1)
	return c.l, nil
}
func (c *countedLink) Open(int) transport.Link { return c.l }

// fullLink is a shared-memory link whose buffer never has room for a send
// without waiting.
type fullLink struct{ *shmlink.Link }

func (fullLink) TrySend(context.Context, *wire.Header, []byte) (bool, error) { return false, nil }

// runPair runs rank r's plan of req on both ranks of a shm pair, with
// inputs of the call's number, and checks each rank's receive buffer
// against want. It returns the ranks' waiting link lookups.
func runPair(t *testing.T, ctx context.Context, links [2]transport.Link, a plan.Algorithm, req plan.Request, call uint64,
	want func(inputs [2][]byte, r int) []byte) [2]int32 {
	t.Helper()
	n := req.Count
	in := n * 4
	out := in
	if req.Coll == plan.AllGather {
		out = 2 * in
	}
	var inputs [2][]byte
	var bufs [2]Buffers
	var counted [2]*countedLink
	errs := make(chan error, 2)
	for r := range 2 {
		inputs[r] = make([]byte, in)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(inputs[r][4*i:], uint32(i*7+r*1000+int(call)))
		}
		bufs[r] = Buffers{Send: bytes.Clone(inputs[r]), Recv: make([]byte, out)}
		if req.InPlace {
			copy(bufs[r].Recv, inputs[r])
			bufs[r].Send = bufs[r].Recv
			if req.Coll == plan.AllGather {
				copy(bufs[r].Recv[r*in:], inputs[r])
				bufs[r].Send = bufs[r].Recv[r*in : (r+1)*in]
			}
		}
		rq := req
		rq.Rank, rq.Size = r, 2
		p, err := a.Build(rq)
		if err != nil {
			t.Fatal(err)
		}
		counted[r] = &countedLink{l: links[r]}
		e := New(r, counted[r], Config{})
		defer e.Close()
		go func() {
			errs <- e.Run(ctx, p, Call{Seq: call, Desc: wire.Call{Coll: uint8(req.Coll), Count: uint64(n)}, ElemSize: 4, Kernel: subInt32}, bufs[r])
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
	}
	for r := range 2 {
		if w := want(inputs, r); !bytes.Equal(bufs[r].Recv, w) {
			t.Fatalf("call %d: rank %d holds other bytes than expected", call, r)
		}
	}
	return [2]int32{counted[0].lookups.Load(), counted[1].lookups.Load()}
}

// allReduced is the AllReduce of the inputs with subInt32, whose order
// shows: in rank order on both ranks, so that they hold the same bits.
func allReduced(inputs [2][]byte, _ int) []byte {
	out := make([]byte, len(inputs[0]))
	subInt32(out, inputs[0], inputs[1])
	return out
}

func allGathered(inputs [2][]byte, _ int) []byte { return append(bytes.Clone(inputs[0]), inputs[1]...) }

// TestPairStep: plans of one exchange with one peer (one-shot AllReduce
// and ring AllGather at np 2, in and out of place) give the exact result,
// reduced in rank order on both ranks,
// through the pair step up to pairMax bytes a transfer, without a single
// waiting link lookup, and through the general step beyond it, over real
// shared memory, for several calls in a row on the same links.
func TestPairStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l0, l1 := shmPair(t, ctx, 0, false)
	links := [2]transport.Link{l0, l1}
	for _, tt := range []struct {
		a    plan.Algorithm
		coll plan.Coll
		want func([2][]byte, int) []byte
	}{
		{algo.OneShot{}, plan.AllReduce, allReduced},
		{algo.Ring{}, plan.AllGather, allGathered},
	} {
		for _, inPlace := range []bool{false, true} {
			for _, count := range []int{1, 2, 7, pairMax / 4, pairMax/4 + 1} {
				t.Run(fmt.Sprintf("%s/%s/inplace=%v/%d", tt.a.Name(), tt.coll, inPlace, count), func(t *testing.T) {
					req := plan.Request{Coll: tt.coll, Count: count, InPlace: inPlace}
					for call := uint64(1); call <= 3; call++ {
						lookups := runPair(t, ctx, links, tt.a, req, call, tt.want)
						general := count*4 > pairMax
						if got := lookups[0] > 0 || lookups[1] > 0; got != general {
							t.Fatalf("call %d: %d-byte transfers took the general step: %v, want %v (lookups %v)", call, count*4, got, general, lookups)
						}
					}
				})
			}
		}
	}
}

// TestPairStepFullBuffer: when the link has no room for the send without
// waiting, the pair step hands the step to the general path, which sends
// on a worker while receiving: the result is still exact.
func TestPairStepFullBuffer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l0, l1 := shmPair(t, ctx, 0, false)
	links := [2]transport.Link{fullLink{l0}, fullLink{l1}}
	for call := uint64(1); call <= 3; call++ {
		lookups := runPair(t, ctx, links, algo.OneShot{}, plan.Request{Coll: plan.AllReduce, Count: 5}, call, allReduced)
		if lookups[0] == 0 || lookups[1] == 0 {
			t.Fatalf("call %d: the general step did not run (lookups %v)", call, lookups)
		}
	}
}

// TestPairStepMismatch: ranks that disagree on the call's size fail the
// pair step with a MismatchError naming the peer, and do not hang.
func TestPairStepMismatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l0, l1 := shmPair(t, ctx, 0, false)
	links := [2]transport.Link{l0, l1}
	errs := make(chan error, 2)
	for r := range 2 {
		count := 2 + r
		p, err := algo.OneShot{}.Build(plan.Request{Coll: plan.AllReduce, Count: count, Rank: r, Size: 2})
		if err != nil {
			t.Fatal(err)
		}
		e := New(r, oneLink{links[r]}, Config{})
		defer e.Close()
		buf := make([]byte, 4*count)
		go func() {
			errs <- e.Run(ctx, p, Call{Seq: 1, Desc: wire.Call{Coll: uint8(plan.AllReduce), Count: uint64(count)}, ElemSize: 4, Kernel: sumInt32},
				Buffers{Send: buf, Recv: make([]byte, len(buf))})
		}()
	}
	for range 2 {
		err := <-errs
		var mm *MismatchError
		if !errors.As(err, &mm) {
			t.Fatalf("got %v, want a MismatchError", err)
		}
		if mm.Peer != 1-mm.Rank {
			t.Fatalf("rank %d's mismatch names peer %d", mm.Rank, mm.Peer)
		}
	}
}

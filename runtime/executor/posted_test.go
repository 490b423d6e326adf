package executor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
)

// oneLink is the Links of a rank with a single peer.
type oneLink struct{ l transport.Link }

func (o oneLink) Link(context.Context, int) (transport.Link, error) { return o.l, nil }
func (o oneLink) Open(int) transport.Link                           { return o.l }

// shmPair opens a real shared-memory link between ranks 0 and 1 of this
// process.
func shmPair(t *testing.T, ctx context.Context, ringBytes int, noDirect bool) (l0, l1 *shmlink.Link) {
	t.Helper()
	job, key := fmt.Sprintf("exec-test-%d-%d", os.Getpid(), time.Now().UnixNano()), []byte("0123456789abcdef0123456789abcdef")
	ln, err := shmlink.Listen(job, 0, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed := make(chan error, 1)
	go func() {
		var err error
		l1, err = shmlink.Dial(ctx, shmlink.DialConfig{JobID: job, Addr: ln.Addr(), Key: key, Self: 1, Peer: 0, RingBytes: ringBytes, NoDirect: noDirect})
		dialed <- err
	}()
	l0, _, err = ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-dialed; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l0.Close(); l1.Close() })
	if l0.ReadsDirect() == noDirect || l1.ReadsDirect() == noDirect {
		t.Fatalf("the links read in place: %v, %v; asked for no direct reads: %v", l0.ReadsDirect(), l1.ReadsDirect(), noDirect)
	}
	return l0, l1
}

func sumBytes(dst, a, b []byte) {
	for i := range dst {
		dst[i] = a[i] + b[i]
	}
}

// TestPostedSends runs an exchange step (each rank sends its send buffer
// and receives, or receive-reduces, the peer's) over real shm links, with
// transfers that are posted in place as one frame for several segments
// (through a default ring, through a ring smaller than one segment, and
// beyond the bound of what is sent inline), and, over links that do not
// read in place, sent inline into the ring whole and in part (the rest on
// a worker). Both ranks must end with the exact expected bytes, and a
// second call on the same buffers must see the first call's reads
// finished.
func TestPostedSends(t *testing.T) {
	const seg = 256 << 10
	for _, tt := range []struct {
		name      string
		ringBytes int
		bytes     int
		noDirect  bool
	}{
		{"posted whole", 0, 3*seg + 8, false},
		{"posted through a small ring", 512, 16 << 20, false},
		{"posted, larger than the inline bound", 0, inlineMax + seg, false},
		{"inline into the ring", 0, 3*seg + 8, true},
		{"inline in part", 2 * seg, 3*seg + 8, true},
	} {
		for _, kind := range []plan.Kind{plan.OpRecv, plan.OpRecvReduce} {
			t.Run(fmt.Sprintf("%s/%v", tt.name, kind), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				l0, l1 := shmPair(t, ctx, tt.ringBytes, tt.noDirect)
				links := [2]transport.Link{l0, l1}
				n := tt.bytes
				var bufs [2]Buffers
				for r := range bufs {
					bufs[r] = Buffers{Send: make([]byte, n), Recv: make([]byte, n)}
				}
				errs := make(chan error, 2)
				for call := uint64(1); call <= 2; call++ {
					for r := range bufs {
						for i := range bufs[r].Send {
							bufs[r].Send[i] = byte(i*int(call)) + byte(r*3)
						}
					}
					for r := range 2 {
						e := New(r, oneLink{links[r]}, Config{SegmentBytes: seg})
						defer e.Close()
						op := plan.Op{Kind: kind, Peer: 1 - r, Dst: plan.Region{Buf: plan.BufRecv, Len: n}}
						if kind == plan.OpRecvReduce {
							op.Src = plan.Region{Buf: plan.BufSend, Len: n}
						}
						p := &plan.Plan{Coll: plan.AllReduce, Rank: r, Size: 2, Steps: []plan.Step{{Ops: []plan.Op{
							{Kind: plan.OpSend, Peer: 1 - r, Src: plan.Region{Buf: plan.BufSend, Len: n}},
							op,
						}}}}
						go func() {
							errs <- e.Run(ctx, p, Call{Seq: call, Desc: wire.Call{Count: uint64(n)}, ElemSize: 1, Kernel: sumBytes}, bufs[r])
						}()
					}
					for range 2 {
						if err := <-errs; err != nil {
							t.Fatalf("call %d: %v", call, err)
						}
					}
					for r := range bufs {
						want := make([]byte, n)
						for i := range want {
							want[i] = bufs[1-r].Send[i]
							if kind == plan.OpRecvReduce {
								want[i] += bufs[r].Send[i]
							}
						}
						if !bytes.Equal(bufs[r].Recv, want) {
							t.Fatalf("call %d: rank %d received other bytes", call, r)
						}
					}
				}
			})
		}
	}
}

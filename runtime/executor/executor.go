package executor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport"
)

// DefaultSegmentBytes is the pipelining unit when Config leaves it zero:
// large enough that per-frame costs vanish, small enough that a receiver
// starts reducing while the sender is still sending.
const DefaultSegmentBytes = 256 << 10

// Links gives the executor the link to a peer, opening it on first use.
type Links interface {
	Link(ctx context.Context, peer int) (transport.Link, error)
}

// Call describes the collective call being executed, identically on every
// rank that takes part.
type Call struct {
	Seq      uint64     // per-communicator sequence number
	Desc     netio.Call // what every frame of the call carries
	ElemSize int        // bytes per element
	// Kernel computes dst = a op b elementwise over bytes; nil when the
	// collective does not reduce.
	Kernel func(dst, a, b []byte)
}

// Buffers are the caller's buffers, as bytes. Send and Recv may alias.
type Buffers struct {
	Send []byte
	Recv []byte
}

// Executor runs plans for one rank. It is not safe for concurrent use: a
// communicator runs one collective at a time.
type Executor struct {
	rank     int
	links    Links
	segBytes int

	scratch []byte
	staging map[int][]byte // per receiving peer, for links without PayloadVisitor

	// Transfer ordinals of the current call, per peer.
	sendOrd map[int]uint32
	recvOrd map[int]uint32
}

// Config tunes an Executor.
type Config struct {
	SegmentBytes int // pipelining unit; DefaultSegmentBytes when 0
}

// New returns an executor for rank that reaches its peers through links.
func New(rank int, links Links, cfg Config) *Executor {
	seg := cfg.SegmentBytes
	if seg <= 0 {
		seg = DefaultSegmentBytes
	}
	return &Executor{
		rank:     rank,
		links:    links,
		segBytes: seg,
		staging:  make(map[int][]byte),
		sendOrd:  make(map[int]uint32),
		recvOrd:  make(map[int]uint32),
	}
}

// Run executes p, this rank's plan of call, over bufs. It returns when the
// rank's part is done: its sends have been handed to the links and its
// receives have landed.
func (e *Executor) Run(ctx context.Context, p *plan.Plan, call Call, bufs Buffers) error {
	if call.ElemSize <= 0 {
		return fmt.Errorf("executor: element size %d", call.ElemSize)
	}
	scratch := e.scratchFor(p.ScratchLen * call.ElemSize)
	clear(e.sendOrd)
	clear(e.recvOrd)
	r := run{e: e, call: &call, bufs: bufs, scratch: scratch}
	for i := range p.Steps {
		if err := r.step(ctx, i, &p.Steps[i]); err != nil {
			return err
		}
	}
	return nil
}

// run is the state of one Run.
type run struct {
	e       *Executor
	call    *Call
	bufs    Buffers
	scratch []byte
}

// task is one op of a step with everything resolved before it starts.
type task struct {
	op       *plan.Op
	link     transport.Link
	ord      uint32
	src, dst []byte
	stage    []byte // staging of a RecvReduce whose link cannot show payloads in place
}

func (r *run) step(ctx context.Context, index int, s *plan.Step) error {
	tasks := make([]task, len(s.Ops))
	for i := range s.Ops {
		if err := r.prepare(ctx, &s.Ops[i], &tasks[i]); err != nil {
			return &LinkError{Peer: s.Ops[i].Peer, Step: index, Op: s.Ops[i].String(), Err: err}
		}
	}
	if len(tasks) == 1 {
		return r.exec(ctx, index, &tasks[0])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	for i := 1; i < len(tasks); i++ {
		wg.Add(1)
		go func(t *task) {
			defer wg.Done()
			if err := r.exec(ctx, index, t); err != nil {
				fail(err)
			}
		}(&tasks[i])
	}
	if err := r.exec(ctx, index, &tasks[0]); err != nil {
		fail(err)
	}
	wg.Wait()
	return firstErr
}

// prepare resolves an op's regions and link and takes its transfer ordinal.
func (r *run) prepare(ctx context.Context, op *plan.Op, t *task) error {
	t.op = op
	var err error
	if t.src, err = r.region(op.Src); err != nil {
		return err
	}
	if t.dst, err = r.region(op.Dst); err != nil {
		return err
	}
	switch op.Kind {
	case plan.OpSend:
		t.ord = r.e.sendOrd[op.Peer]
		r.e.sendOrd[op.Peer]++
	case plan.OpRecv, plan.OpRecvReduce:
		t.ord = r.e.recvOrd[op.Peer]
		r.e.recvOrd[op.Peer]++
	case plan.OpCopy, plan.OpReduce:
		if len(t.src) != len(t.dst) {
			return fmt.Errorf("%s: source and destination lengths differ", op)
		}
		return nil
	default:
		return fmt.Errorf("unknown op kind %d", op.Kind)
	}
	if op.Kind == plan.OpRecvReduce && (r.call.Kernel == nil || len(t.src) != len(t.dst)) {
		return errors.New("RecvReduce without a kernel or with regions of different lengths")
	}
	if op.Peer == r.e.rank {
		return errors.New("transfer to self")
	}
	if t.link, err = r.e.links.Link(ctx, op.Peer); err != nil {
		return err
	}
	if _, inPlace := t.link.(transport.PayloadVisitor); op.Kind == plan.OpRecvReduce && !inPlace {
		t.stage = r.e.stagingFor(op.Peer)
	}
	return nil
}

func (r *run) region(reg plan.Region) ([]byte, error) {
	var buf []byte
	switch reg.Buf {
	case plan.BufNone:
		return nil, nil
	case plan.BufSend:
		buf = r.bufs.Send
	case plan.BufRecv:
		buf = r.bufs.Recv
	case plan.BufScratch:
		buf = r.scratch
	default:
		return nil, fmt.Errorf("unknown buffer %d", reg.Buf)
	}
	es := r.call.ElemSize
	lo, hi := reg.Off*es, (reg.Off+reg.Len)*es
	if reg.Off < 0 || reg.Len < 0 || hi > len(buf) {
		return nil, fmt.Errorf("region %s outside its buffer of %d elements", reg, len(buf)/es)
	}
	return buf[lo:hi:hi], nil
}

func (r *run) exec(ctx context.Context, index int, t *task) error {
	var err error
	switch t.op.Kind {
	case plan.OpSend:
		err = r.send(ctx, t)
	case plan.OpRecv, plan.OpRecvReduce:
		err = r.recv(ctx, t)
	case plan.OpCopy:
		if len(t.dst) > 0 && &t.dst[0] != &t.src[0] {
			copy(t.dst, t.src)
		}
	case plan.OpReduce:
		r.call.Kernel(t.dst, t.dst, t.src)
	}
	if err != nil {
		var mm *MismatchError
		if errors.As(err, &mm) {
			return err
		}
		return &LinkError{Peer: t.op.Peer, Step: index, Op: t.op.String(), Err: err}
	}
	return nil
}

// segment returns the byte length of the segment at off of a transfer of n
// bytes, a whole number of elements.
func (r *run) segment(off, n int) int {
	seg := r.e.segBytes - r.e.segBytes%r.call.ElemSize
	if seg <= 0 {
		seg = r.call.ElemSize
	}
	return min(seg, n-off)
}

func (r *run) header(ord uint32, off, n int) netio.Header {
	return netio.Header{
		Seq:    r.call.Seq,
		Call:   r.call.Desc,
		Src:    uint32(r.e.rank),
		Step:   ord,
		Offset: uint64(off),
		Len:    uint32(n),
	}
}

func (r *run) send(ctx context.Context, t *task) error {
	src := t.src
	for off := 0; ; {
		n := r.segment(off, len(src))
		h := r.header(t.ord, off, n)
		if err := t.link.Send(ctx, &h, src[off:off+n]); err != nil {
			return err
		}
		off += n
		if off >= len(src) {
			return nil
		}
	}
}

func (r *run) recv(ctx context.Context, t *task) error {
	dst := t.dst
	visitor, _ := t.link.(transport.PayloadVisitor)
	for off := 0; ; {
		n := r.segment(off, len(dst))
		want := r.header(t.ord, off, n)
		want.Src = uint32(t.op.Peer)
		var got netio.Header
		if err := t.link.RecvHeader(ctx, &got); err != nil {
			return err
		}
		if got != want {
			return &MismatchError{Rank: r.e.rank, Peer: t.op.Peer, Want: want, Got: got}
		}
		if err := r.payload(ctx, t, visitor, off, n); err != nil {
			return err
		}
		off += n
		if off >= len(dst) {
			return nil
		}
	}
}

// payload lands one received segment: copied into dst for OpRecv, reduced
// with src into dst for OpRecvReduce, straight from the link's buffer when
// the link can show it in place.
func (r *run) payload(ctx context.Context, t *task, visitor transport.PayloadVisitor, off, n int) error {
	dst := t.dst[off : off+n]
	if t.op.Kind == plan.OpRecv {
		return t.link.RecvPayload(ctx, dst)
	}
	src := t.src[off : off+n]
	kernel := r.call.Kernel
	if visitor != nil {
		return visitor.VisitPayload(ctx, n, elementPieces(r.call.ElemSize, dst, src, kernel))
	}
	stage := t.stage[:n]
	if err := t.link.RecvPayload(ctx, stage); err != nil {
		return err
	}
	kernel(dst, src, stage)
	return nil
}

// elementPieces adapts a reduction to VisitPayload, whose pieces may split
// an element where a ring wraps around: the bytes of a split element are
// gathered in a carry buffer and reduced once complete.
func elementPieces(es int, dst, src []byte, kernel func(dst, a, b []byte)) func(off int, b []byte) {
	var carry [16]byte
	carried := 0
	return func(off int, b []byte) {
		if carried > 0 {
			take := copy(carry[carried:es], b)
			carried += take
			b, off = b[take:], off+take
			if carried < es {
				return
			}
			kernel(dst[off-es:off], src[off-es:off], carry[:es])
			carried = 0
		}
		whole := len(b) - len(b)%es
		if whole > 0 {
			kernel(dst[off:off+whole], src[off:off+whole], b[:whole])
		}
		carried = copy(carry[:], b[whole:])
	}
}

// stagingFor returns the staging buffer of receives from peer. Ops of one
// step receive from distinct peers, so they never share one.
func (e *Executor) stagingFor(peer int) []byte {
	b, ok := e.staging[peer]
	if !ok {
		b = prefaulted(e.segBytes)
		e.staging[peer] = b
	}
	return b
}

func (e *Executor) scratchFor(n int) []byte {
	if len(e.scratch) < n {
		e.scratch = prefaulted(n)
	}
	return e.scratch[:n]
}

// prefaulted allocates n bytes and touches every page, so that the first
// touch (about 10 us per 4 KiB page on these machines) happens here and not
// inside a collective.
func prefaulted(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	clear(b)
	return b
}

package executor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/hcclrun/hcclrun/internal/cpu"
	"github.com/hcclrun/hcclrun/internal/wire"
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
	// Open returns the link to peer if it is already open, else nil,
	// without waiting.
	Open(peer int) transport.Link
}

// Call describes the collective call being executed, identically on every
// rank that takes part.
type Call struct {
	Seq      uint64    // per-communicator sequence number
	Desc     wire.Call // what every frame of the call carries
	ElemSize int       // bytes per element
	// Kernel computes dst = a op b elementwise over bytes; nil when the
	// collective does not reduce.
	Kernel func(dst, a, b []byte)
	// Post lets the sends from the caller's send buffer be handed over in
	// place, to links that can (transport.Poster); otherwise they are
	// copied into the links' buffers.
	Post bool
	// TraceWhole, with Config.Trace, lets Run leave the ops of a small
	// pair plan to the caller to record (Executor.PairTraced, observe.go).
	// It sits by Post, in the padding after it: the struct is copied a
	// few times a call, traced or not.
	TraceWhole bool
	// Segment, when positive, is the call's pipelining unit in bytes (the
	// selector's), at most the executor's own (Config.SegmentBytes), which
	// the links' buffers bound, and at least the pair step's largest
	// transfer (4 KiB), which is sent whole; 0 keeps the executor's.
	Segment int
	// TraceStart, with Config.Trace, is TraceNow at the call's start, which
	// the trace's first op starts from (0: read the clock).
	TraceStart int64
}

// Buffers are the caller's buffers, as bytes. Send and Recv may alias.
type Buffers struct {
	Send []byte
	Recv []byte
}

// Executor runs plans for one rank. It is not safe for concurrent use: a
// communicator runs one collective at a time. Close stops its workers.
type Executor struct {
	rank     int
	links    Links
	segBytes int

	scratch   []byte
	stagingMu sync.Mutex
	staging   map[int][]byte // per receiving peer, for links without PayloadVisitor

	run       run // the current Run's state
	tasks     []*task
	left      []*task  // the tasks of a step not done inline by trySends
	posted    []posted // the links a step posted payloads to, waited for at its end
	localLeft []*task  // the tasks of a step that are not local ops
	localTask task     // the op of a step of local ops only (localOps)
	pairs     pairPlan // whether the plan run last starts with a pair step, and its state
	workers   []*worker
	stepWG    sync.WaitGroup
	onFail    func(error)
	poll      Poll
	where     *atomic.Uint64 // Config.Where (observe.go)
	trace     Tracer         // Config.Trace
	clock     int64          // the last Run's last reading of TraceNow (TraceClock)

	// Transfer ordinals of the current call, indexed by peer (grown on
	// demand), and the peers whose ordinals the call touched, which the
	// next call resets: a call costs its own ops, not the job's size.
	sendOrd, recvOrd []uint32
	touched          []int
}

// Config tunes an Executor.
type Config struct {
	SegmentBytes int // pipelining unit; DefaultSegmentBytes when 0
	// OnFailure, when set, is called as soon as an op fails, before the
	// other ops of its step have finished: they may be blocked on peers
	// that will never send, and the owner unblocks them by closing (or
	// aborting) the links.
	OnFailure func(error)
	// Poll is how the calling goroutine waits for the small receives of a
	// step with several (takeArrived).
	Poll Poll
	// Where, when set, is stored where the rank waits (observe.go).
	Where *atomic.Uint64
	// Trace, when set, is told of every op (observe.go).
	Trace Tracer
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
		pairs:    pairPlan{maxBytes: min(pairMax, seg&^7)}, // whole elements of any size
		onFail:   cfg.OnFailure,
		poll:     cfg.Poll,
		where:    cfg.Where,
		trace:    cfg.Trace,
		staging:  make(map[int][]byte),
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
	for _, peer := range e.touched {
		e.sendOrd[peer], e.recvOrd[peer] = 0, 0
	}
	e.touched = e.touched[:0]
	// The run lives in the executor, so that the tasks pointing at it do
	// not make every call allocate one.
	seg := e.segBytes
	if call.Segment > 0 {
		seg = min(seg, max(call.Segment, pairMax))
	}
	seg -= seg % call.ElemSize
	if seg <= 0 {
		seg = call.ElemSize
	}
	e.run = run{e: e, call: call, bufs: bufs, scratch: scratch, seg: seg}
	r := &e.run
	if e.trace != nil {
		r.startClock(p) // observe.go
	}
	first := 0
	if e.pairs.of(p, e.rank) {
		ran, err := r.pairStep(ctx, &e.pairs)
		if ran {
			if err != nil {
				return err
			}
			first = 1
		} else {
			r.call.TraceWhole = false // the general path reports its ops
		}
	}
	for i := first; i < len(p.Steps); i++ {
		if err := r.step(ctx, i, &p.Steps[i]); err != nil {
			return err
		}
	}
	e.clock = r.clock
	return nil
}

// run is the state of one Run.
type run struct {
	e       *Executor
	call    Call
	bufs    Buffers
	scratch []byte
	seg     int   // the segment's bytes: Executor.segBytes in whole elements
	clock   int64 // Config.Trace only: the calling goroutine's last reading of Now (observe.go)
}

// task is one op of a step with everything resolved before it starts. The
// executor keeps its tasks between calls (tasks), so that a step allocates
// nothing.
type task struct {
	r        *run
	ctx      context.Context // of the step, for a task handed to a worker
	index    int             // step index, for errors
	op       *plan.Op
	ord      uint32
	src, dst []byte
	sent     int // bytes of src that tryInline sent; exec sends the rest
	err      error
	pieces   pieceReducer      // RecvReduce straight from a link's buffer
	arriver  transport.Arriver // a receive's link, when it can say a frame arrived (takeArrived)
	// Headers handed to links through interfaces escape; keeping them in
	// the task keeps them off the per-call heap.
	sendHdr, recvHdr wire.Header
	start, waited    int64 // TraceNow at exec, and until the first frame came (Config.Trace only)
	polled           int64 // Config.Trace only: when takeArrived began to poll for it (0: not polled)
}

// begin readies a kept task for an op of step index. Only what carries
// over from the task's last use is reset: prepare sets the op and the
// regions, the sends and receives write their headers, and the pieces
// state starts afresh (pieceReducer.start). Assigning a fresh task instead
// copied all of its ~300 bytes for every op of every call, a tenth of an
// 8-byte AllReduce's profile.
func (t *task) begin(r *run, index int) {
	t.r, t.ctx, t.index, t.ord, t.sent, t.err, t.polled = r, nil, index, 0, 0, nil, 0
}

// worker runs the ops of a step beyond the first, each on a goroutine of
// its own that lives as long as the executor: spawning one per op would
// allocate in every call.
type worker struct {
	jobs chan *task
}

func (e *Executor) startWorker() *worker {
	w := &worker{jobs: make(chan *task)}
	go func() {
		for t := range w.jobs {
			t.err = t.r.exec(t.ctx, t)
			e.stepWG.Done()
		}
	}()
	return w
}

func (r *run) step(ctx context.Context, index int, s *plan.Step) error {
	if localOnly(s) {
		return r.localOps(index, s)
	}
	e := r.e
	for len(e.tasks) < len(s.Ops) {
		e.tasks = append(e.tasks, new(task))
	}
	tasks := e.tasks[:len(s.Ops)]
	for i := range s.Ops {
		t := tasks[i]
		t.begin(r, index)
		if err := r.prepare(&s.Ops[i], t); err != nil {
			return &LinkError{Peer: s.Ops[i].Peer, Step: index, Op: s.Ops[i].String(), Err: err}
		}
	}
	e.posted = e.posted[:0]
	tasks = r.inlineFirst(ctx, tasks)
	r.backgroundStarted(tasks)
	if err := r.runTasks(ctx, tasks); err != nil {
		return err
	}
	err := r.waitPosted(ctx, index)
	if r.e.trace != nil {
		r.clock = TraceNow() // the step waited: for peers, for workers
	}
	return err
}

// localOnly reports whether a step only copies and reduces locally, as
// the steps after a one-shot AllReduce's exchange do.
func localOnly(s *plan.Step) bool {
	for i := range s.Ops {
		if k := s.Ops[i].Kind; k != plan.OpCopy && k != plan.OpReduce {
			return false
		}
	}
	return true
}

// localOps runs the local ops of step index straight, without the tasks
// and the hand-over machinery of a step that communicates (for a small
// collective that machinery costs more than the copy or reduction), and
// skips its transfers: a step of local ops only, or the local ops of a
// pair step (pairStep).
func (r *run) localOps(index int, s *plan.Step) error {
	t := &r.e.localTask
	for i := range s.Ops {
		if k := s.Ops[i].Kind; k != plan.OpCopy && k != plan.OpReduce {
			continue
		}
		t.begin(r, index)
		if err := r.prepare(&s.Ops[i], t); err != nil {
			return &LinkError{Peer: s.Ops[i].Peer, Step: index, Op: s.Ops[i].String(), Err: err}
		}
		if r.e.trace != nil {
			start := r.clock
			r.local(t)
			r.tracedInline(t, start)
			continue
		}
		r.local(t)
	}
	return nil
}

// runTasks runs the tasks of a step: of several, those that have arrived
// on the calling goroutine as they come (takeArrived); then of what is
// left the first on the calling goroutine, the others on workers. It
// returns the first error.
func (r *run) runTasks(ctx context.Context, tasks []*task) error {
	e := r.e
	if len(tasks) > 1 {
		var err error
		if tasks, err = r.takeArrived(ctx, tasks); err != nil {
			return err
		}
	}
	switch len(tasks) {
	case 0:
		return nil
	case 1:
		return r.exec(ctx, tasks[0])
	}
	for len(e.workers) < len(tasks)-1 {
		e.workers = append(e.workers, e.startWorker())
	}
	e.stepWG.Add(len(tasks) - 1)
	for i, t := range tasks[1:] {
		t.ctx = ctx
		e.workers[i].jobs <- t
	}
	tasks[0].err = r.exec(ctx, tasks[0])
	e.stepWG.Wait()
	for _, t := range tasks {
		if t.err != nil {
			return t.err
		}
	}
	return nil
}

// inlineFirst runs on the calling goroutine what cannot block, before the
// rest of the step: first the sends that go out without waiting
// (trySends), so that the peers can start on them at once, then local
// copies and reductions (ops of a step touch disjoint regions, so their
// order does not matter). It returns the tasks left.
func (r *run) inlineFirst(ctx context.Context, tasks []*task) []*task {
	tasks = r.trySends(ctx, tasks)
	left := r.e.localLeft[:0]
	for _, t := range tasks {
		if t.op.Kind == plan.OpCopy || t.op.Kind == plan.OpReduce {
			if r.e.trace != nil {
				start := r.clock
				r.execOp(ctx, t)
				r.tracedInline(t, start)
				continue
			}
			r.execOp(ctx, t) // local ops do not fail
			continue
		}
		left = append(left, t)
	}
	r.e.localLeft = left
	return left
}

// trySends hands over inline, without waiting, what the sends of a step
// can (tryInline), and returns the tasks left to run. A step of a send and
// a receive then runs on the calling goroutine alone: handing the send to a
// worker costs a scheduler wake-up, tens of microseconds on a busy machine,
// more than a small collective takes, and on two cores a second busy
// thread per rank slows a large one too.
func (r *run) trySends(ctx context.Context, tasks []*task) []*task {
	// An empty receive (a rooted call's check frame, callcheck.go) is
	// only a header that is on its way: it does not count.
	receives := false
	for _, t := range tasks {
		receives = receives || (t.op.Kind == plan.OpRecv || t.op.Kind == plan.OpRecvReduce) && t.op.Dst.Len > 0
	}
	left := r.e.left[:0]
	for _, t := range tasks {
		if t.op.Kind != plan.OpSend {
			left = append(left, t)
			continue
		}
		start := r.clock
		if !r.tryInline(ctx, t, receives) {
			left = append(left, t)
		} else if r.e.trace != nil {
			r.tracedInline(t, start)
		}
	}
	r.e.left = left
	return left
}

// inlineMax is the largest transfer that is not posted in place and goes
// into the link's buffer inline, segment by segment while there is room
// (transport.TrySender); larger ones are sent by exec.
//
// Posted transfers have no bound of their own but the frame's (frameMax):
// with the reads as raw system calls in place beat the rings' two copies
// at every size above inlineMax, as Open MPI reads in place at every size
// (docs/measurements.md#posted-transfers-without-a-bound).
const inlineMax = 16 << 20

// frameMax is the largest transfer one frame can carry (wire.Header's Len
// is 32 bits): a transfer posted in place, or started on a TCP link, goes
// as one frame; a larger one goes segment by segment (exec).
const frameMax = math.MaxUint32

// posted is a link that a step posted payloads to or started sends on
// (transport.Poster, transport.AsyncSender).
type posted struct {
	peer int
	link transport.PostWaiter
}

// tryInline sends t as far as its link takes it without waiting: started,
// the link writing the rest while this rank waits for its receives
// (transport.AsyncSender), or handed over in place (transport.Poster), the
// step then waiting at its end for the link to be done with it
// (waitPosted), or else, if it is at most inlineMax bytes, into the link's
// buffer, segment by segment while there is room (transport.TrySender). It
// reports whether all of t was sent; exec sends the rest, from t.sent. An
// error is left to exec too, which meets it again and reports it.
// stepReceives says whether t's step also receives: a post in a step that
// does not tells the receiver that this rank only waits for it, and may
// copy part of it (transport.Poster's thenWaits).
//
// Only the caller's send buffer is handed over in place: the receive
// buffer and scratch are written again by this very collective or the
// next, and writing pages that another process has just read this way
// can be slower than sending them through the ring
// (docs/measurements.md#only-the-send-buffer-in-place).
func (r *run) tryInline(ctx context.Context, t *task, stepReceives bool) bool {
	link := r.e.links.Open(t.op.Peer)
	if link == nil {
		return false
	}
	oneFrame := uint64(len(t.src)) <= frameMax
	if as, ok := link.(transport.AsyncSender); ok && oneFrame {
		// One header for the whole transfer: the link cuts it into
		// frames of its own size, which the receiver takes as they come
		// (recv).
		t.sendHdr = r.header(t.ord, 0, len(t.src))
		if err := as.StartSend(ctx, &t.sendHdr, t.src); err != nil {
			return false
		}
		r.e.posted = append(r.e.posted, posted{t.op.Peer, as})
		return true
	}
	if p, ok := link.(transport.Poster); ok && r.call.Post && len(t.src) > 0 && oneFrame && t.op.Src.Buf == plan.BufSend {
		// One frame for the whole transfer: the receiver takes it for
		// the segments it covers (recv), and reads it with one system
		// call instead of one per segment.
		t.sendHdr = r.header(t.ord, 0, len(t.src))
		if ok, err := p.TryPost(ctx, &t.sendHdr, t.src, !stepReceives); ok && err == nil {
			r.e.posted = append(r.e.posted, posted{t.op.Peer, p})
			return true
		}
	}
	ts, ok := link.(transport.TrySender)
	if !ok || len(t.src) > inlineMax {
		return false
	}
	for {
		n := r.segment(t.sent, len(t.src))
		t.sendHdr = r.header(t.ord, t.sent, n)
		sent, err := ts.TrySend(ctx, &t.sendHdr, t.src[t.sent:t.sent+n])
		if !sent || err != nil {
			return false
		}
		if t.sent += n; t.sent >= len(t.src) {
			return true
		}
	}
}

// backgroundStarted hands the step's started sends to their links to
// finish on their own (transport.AsyncSender.Background) when one of the
// tasks left receives over a link that is not one of theirs: the waits
// of a TCP receive write what is left of the rank's started sends, those
// of a shared-memory receive do not, and the send would otherwise wait
// for the receive to end (a ring step that spans two servers).
func (r *run) backgroundStarted(left []*task) {
	started := false
	for _, p := range r.e.posted {
		if _, ok := p.link.(transport.AsyncSender); ok {
			started = true
			break
		}
	}
	if !started {
		return
	}
	for _, t := range left {
		if t.op.Kind != plan.OpRecv && t.op.Kind != plan.OpRecvReduce {
			continue
		}
		if _, ok := r.e.links.Open(t.op.Peer).(transport.AsyncSender); !ok {
			for _, p := range r.e.posted {
				if as, ok := p.link.(transport.AsyncSender); ok {
					as.Background()
				}
			}
			return
		}
	}
}

// waitPosted waits until the peers have read what the step posted, so
// that the next step may overwrite it.
func (r *run) waitPosted(ctx context.Context, index int) error {
	for _, p := range r.e.posted {
		if err := p.link.WaitPosted(ctx); err != nil {
			err = &LinkError{Peer: p.peer, Step: index, Op: "wait for posted sends", Err: err}
			if r.e.onFail != nil {
				r.e.onFail(err)
			}
			return err
		}
	}
	return nil
}

// nextOrdinal returns peer's next transfer ordinal in ords and counts it.
func (e *Executor) nextOrdinal(ords *[]uint32, peer int) uint32 {
	if peer < 0 {
		return 0 // prepare rejects the op
	}
	if peer >= len(e.sendOrd) {
		n := max(peer+1, 2*len(e.sendOrd))
		e.sendOrd = append(e.sendOrd, make([]uint32, n-len(e.sendOrd))...)
		e.recvOrd = append(e.recvOrd, make([]uint32, n-len(e.recvOrd))...)
	}
	if e.sendOrd[peer] == 0 && e.recvOrd[peer] == 0 {
		e.touched = append(e.touched, peer)
	}
	o := (*ords)[peer]
	(*ords)[peer]++
	return o
}

// prepare resolves an op's regions and takes its transfer ordinal. The
// link is looked up when the op runs, so that an op waiting for a peer to
// connect does not hold up the other ops of its step.
func (r *run) prepare(op *plan.Op, t *task) error {
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
		t.ord = r.e.nextOrdinal(&r.e.sendOrd, op.Peer)
	case plan.OpRecv, plan.OpRecvReduce:
		t.ord = r.e.nextOrdinal(&r.e.recvOrd, op.Peer)
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

// exec runs one op.
func (r *run) exec(ctx context.Context, t *task) error {
	if t.op.Kind != plan.OpCopy && t.op.Kind != plan.OpReduce {
		r.waiting(t.index, t.op.Peer)
	}
	if r.e.trace != nil {
		r.execStart(t) // observe.go
	}
	if err := r.execOp(ctx, t); err != nil {
		return r.failed(t.op, t.index, err)
	}
	if r.e.trace != nil {
		r.tracedWaited(t)
	}
	return nil
}

// failed describes the error of op, of step index, and reports it to the
// owner.
func (r *run) failed(op *plan.Op, index int, err error) error {
	var mm *MismatchError
	if !errors.As(err, &mm) {
		err = &LinkError{Peer: op.Peer, Step: index, Op: op.String(), Err: err}
	}
	// Tell the owner at once: the other ops of the step may be blocked on
	// peers that will never send, until the owner closes the links.
	if r.e.onFail != nil {
		r.e.onFail(err)
	}
	return err
}

func (r *run) execOp(ctx context.Context, t *task) error {
	switch t.op.Kind {
	case plan.OpSend:
		link, err := r.e.links.Link(ctx, t.op.Peer)
		if err != nil {
			return err
		}
		return r.send(ctx, t, link)
	case plan.OpRecv, plan.OpRecvReduce:
		link, err := r.e.links.Link(ctx, t.op.Peer)
		if err != nil {
			return err
		}
		return r.recv(ctx, t, link)
	case plan.OpCopy, plan.OpReduce:
		r.local(t)
	}
	return nil
}

// local runs a copy or a reduction, which cannot fail.
func (r *run) local(t *task) {
	if t.op.Kind == plan.OpReduce {
		r.call.Kernel(t.dst, t.dst, t.src)
	} else if len(t.dst) > 0 && &t.dst[0] != &t.src[0] {
		cpu.Copy(t.dst, t.src)
	}
}

// segment returns the byte length of the segment at off of a transfer of n
// bytes, a whole number of elements.
func (r *run) segment(off, n int) int {
	return min(r.seg, n-off)
}

func (r *run) header(ord uint32, off, n int) wire.Header {
	return wire.Header{
		Seq:    r.call.Seq,
		Call:   r.call.Desc,
		Src:    uint32(r.e.rank),
		Step:   ord,
		Offset: uint64(off),
		Len:    uint32(n),
	}
}

func (r *run) send(ctx context.Context, t *task, link transport.Link) error {
	src := t.src
	for off := t.sent; ; {
		n := r.segment(off, len(src))
		t.sendHdr = r.header(t.ord, off, n)
		if err := link.Send(ctx, &t.sendHdr, src[off:off+n]); err != nil {
			return err
		}
		off += n
		if off >= len(src) {
			return nil
		}
	}
}

func (r *run) recv(ctx context.Context, t *task, link transport.Link) error {
	dst := t.dst
	visitor, _ := link.(transport.PayloadVisitor)
	for off := 0; ; {
		n := r.segment(off, len(dst))
		want := r.header(t.ord, off, n)
		want.Src = uint32(t.op.Peer)
		if err := link.RecvHeader(ctx, &t.recvHdr); err != nil {
			return err
		}
		if off == 0 && r.e.trace != nil {
			t.waited = TraceNow() - t.start
		}
		if got := int(t.recvHdr.Len); got != n && got > 0 && got <= len(dst)-off && got%r.call.ElemSize == 0 {
			// A frame of the sender's size, not this rank's segment:
			// a posted transfer, or a started one that the link cut
			// into frames of its own size (tryInline).
			n, want.Len = got, t.recvHdr.Len
		}
		if t.recvHdr != want {
			return &MismatchError{Rank: r.e.rank, Peer: t.op.Peer, Want: want, Got: t.recvHdr}
		}
		if err := r.payload(ctx, t, link, visitor, off, n); err != nil {
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
func (r *run) payload(ctx context.Context, t *task, link transport.Link, visitor transport.PayloadVisitor, off, n int) error {
	dst := t.dst[off : off+n]
	if t.op.Kind == plan.OpRecv {
		return link.RecvPayload(ctx, dst)
	}
	src := t.src[off : off+n]
	if visitor != nil {
		return visitor.VisitPayload(ctx, n, t.pieces.start(r.call.ElemSize, dst, src, r.call.Kernel, t.op.PeerFirst))
	}
	stage := r.e.stagingFor(t.op.Peer, n)[:n]
	if err := link.RecvPayload(ctx, stage); err != nil {
		return err
	}
	if t.op.PeerFirst {
		r.call.Kernel(dst, stage, src)
	} else {
		r.call.Kernel(dst, src, stage)
	}
	return nil
}

// pieceReducer reduces the pieces VisitPayload shows into dst. Pieces may
// split an element where a ring wraps around: the bytes of a split element
// are gathered in a carry buffer and reduced once complete. Each task keeps
// its pieceReducer and the function value bound to it, so that visiting
// allocates nothing after the first call.
type pieceReducer struct {
	es        int
	dst, src  []byte
	kernel    func(dst, a, b []byte)
	peerFirst bool // the pieces are the kernel's first input (plan.Op.PeerFirst)
	carry     [16]byte
	carried   int
	fn        func(off int, b []byte)
}

func (p *pieceReducer) start(es int, dst, src []byte, kernel func(dst, a, b []byte), peerFirst bool) func(off int, b []byte) {
	p.es, p.dst, p.src, p.kernel, p.peerFirst, p.carried = es, dst, src, kernel, peerFirst, 0
	if p.fn == nil {
		p.fn = p.piece
	}
	return p.fn
}

// reduce reduces the whole elements of piece, at offset off, into dst.
func (p *pieceReducer) reduce(off int, piece []byte) {
	dst, src := p.dst[off:off+len(piece)], p.src[off:off+len(piece)]
	if p.peerFirst {
		p.kernel(dst, piece, src)
	} else {
		p.kernel(dst, src, piece)
	}
}

func (p *pieceReducer) piece(off int, b []byte) {
	es := p.es
	if p.carried > 0 {
		take := copy(p.carry[p.carried:es], b)
		p.carried += take
		b, off = b[take:], off+take
		if p.carried < es {
			return
		}
		p.reduce(off-es, p.carry[:es])
		p.carried = 0
	}
	whole := len(b) - len(b)%es
	if whole > 0 {
		p.reduce(off, b[:whole])
	}
	p.carried = copy(p.carry[:], b[whole:])
}

// stagingFor returns the staging buffer of receives from peer, at least n
// bytes (a segment, or a larger frame from a link that cuts the frames of
// a started send itself, transport.AsyncSender). Ops of one step receive
// from distinct peers, so they never share one; ops of one step may ask
// concurrently.
func (e *Executor) stagingFor(peer, n int) []byte {
	e.stagingMu.Lock()
	defer e.stagingMu.Unlock()
	b := e.staging[peer]
	if len(b) < n {
		b = prefaulted(max(n, e.segBytes))
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

// Close stops the executor's worker goroutines. Run must not be running.
func (e *Executor) Close() {
	for _, w := range e.workers {
		close(w.jobs)
	}
	e.workers = nil
}

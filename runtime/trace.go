package runtime

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hcclrun/hcclrun/netio/control"
	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
	"github.com/hcclrun/hcclrun/runtime/trace"
)

// HCCL_TRACE=DIR: the job's communicator records its calls and their
// ops in a ring of the last HCCL_TRACE_EVENTS events (package trace) and
// writes them to DIR/rank-<rank>.json at Close, after a failed call (the
// program may exit without Close), and on SIGTERM, SIGINT or SIGHUP,
// after which the signal's own action follows (unless the program
// catches it too). A communicator made by Split records into a ring of
// its own, written to DIR/rank-<rank>.comm-<id>.json (peers named by
// their rank in the job) at its Close, after its failed calls, and with
// the job's communicator's file on a signal or at that one's Close.
// HCCL_REPORT=1: the job's communicator tallies its calls by kind and
// size class and puts the tally on the control plane at Close, where
// hcclrun --report reads it; a Split child's calls are not in the tally.
//
// Off, the cost is one nil check per call here and one per op in the
// executor (docs/performance.md#tracing-overhead).

const (
	defaultTraceEvents = 1 << 16 // about 6 MB of events
	maxTraceEvents     = 1 << 24
	// ReportKey is the control-plane key prefix of the ranks' summaries
	// (HCCL_REPORT): ReportKey + rank.
	ReportKey = "hccl/report/"
	// clockSamples is how many round trips measure the clock offset.
	clockSamples = 8
)

// observer is what a communicator records when HCCL_TRACE or
// HCCL_REPORT is set.
type observer struct {
	ring  *trace.Ring  // nil without HCCL_TRACE
	tally *trace.Tally // nil without HCCL_REPORT; under Comm.mu
	dir   string
	why   string // the reason recorded for the selector's choices
	file  trace.File
	// cal is the reading of the trace's clock against Now when the
	// observer was made, one end of the line that turns the ring's and
	// the tally's ticks into ns (executor/ticks.go).
	cal   executor.Calibration
	sigs  chan os.Signal
	stop  chan struct{}
	wrote sync.Mutex // one write at a time
	done  sync.WaitGroup
	// live is set by the program's first call: the executor's ops of
	// Init's own (warmup.go), numbered as the program's first, are not
	// recorded.
	live atomic.Bool
	// The names of the last call recorded, and their number in the ring,
	// under Comm.mu.
	lastNames trace.Names
	lastName  uint16
	named     bool
	// The templates of pair plans' ops in the ring (template), under
	// Comm.mu, with what making one needs.
	lastTemplate    templateKey
	lastTemplateNum int32
	templates       map[templateKey]int32
	pairs           []executor.PairOp
	tmpl            []trace.PairOp
	lastPair        lastPair // under Comm.mu

	// A Split child's observer: the job communicator's observer, which
	// writes the child's file with its own on a signal, and the child's
	// ranks in the job, by rank in the child.
	root    *observer
	members []int
	// The job communicator's observer: its children's, until they close.
	kidsMu sync.Mutex
	kids   map[*observer]*Comm
}

// newObserver returns the observer of the job's communicator c, or nil
// when neither knob is set.
func newObserver(ctx context.Context, c *Comm) *observer {
	k := c.knobs
	if (k.TraceDir == "" && !k.Report) || !c.reportsProgress() {
		return nil
	}
	o := &observer{dir: k.TraceDir, why: "the cost model's cheapest", cal: executor.Calibrate()}
	if k.Algo != "" {
		o.why = "HCCL_ALGO=" + k.Algo
	}
	if k.Report {
		o.tally = trace.NewTally()
	}
	if k.TraceDir == "" {
		return o
	}
	o.ring = trace.NewRing(k.TraceEvents)
	host, _ := os.Hostname()
	o.file = trace.File{Version: trace.Version, JobID: c.job.JobID, Rank: c.job.Rank, Size: c.job.Size,
		LocalRank: c.job.LocalRank, NodeRank: c.job.NodeRank, Host: host, PID: os.Getpid(),
		Epoch: executor.Epoch().UnixNano()}
	o.file.Clock = o.measureClock(ctx, c)
	o.sigs, o.stop = make(chan os.Signal, 1), make(chan struct{})
	signal.Notify(o.sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	o.done.Add(1)
	go o.onSignal(c)
	return o
}

// newChildObserver returns the observer of k, a child of c made by
// Split, or nil when the job does not trace: a ring of its own, the job
// communicator's file description with k's identity, and no tally.
func newChildObserver(c, k *Comm) *observer {
	c.mu.Lock()
	parent := cmp.Or(c.obs, c.obsOff)
	c.mu.Unlock()
	if parent == nil || parent.ring == nil {
		return nil
	}
	root := cmp.Or(parent.root, parent)
	o := &observer{dir: root.dir, why: root.why, cal: executor.Calibrate(), root: root,
		ring: trace.NewRing(k.knobs.TraceEvents), members: k.links.members}
	o.live.Store(true) // a child runs no calls of its own making
	root.wrote.Lock()  // a write of root's fills its file
	o.file = root.file
	root.wrote.Unlock()
	o.file.Transports, o.file.Calls, o.file.Ops, o.file.ClockEnd = nil, nil, nil, nil
	o.file.Comm, o.file.CommRank, o.file.CommSize = fmt.Sprintf("%#x", k.id), k.job.Rank, k.job.Size
	root.kidsMu.Lock()
	if root.kids == nil {
		root.kids = map[*observer]*Comm{}
	}
	root.kids[o] = k
	root.kidsMu.Unlock()
	return o
}

// writeChildren writes the files of the children still open, with why.
func (o *observer) writeChildren(why string) {
	o.kidsMu.Lock()
	defer o.kidsMu.Unlock()
	for kid, k := range o.kids {
		kid.write(k, why, false)
	}
}

// measureClock measures the rank's clock against the control plane's.
func (o *observer) measureClock(ctx context.Context, c *Comm) trace.Clock {
	cl, ok := c.ctl.(interface {
		Clock(context.Context, int) (control.ClockOffset, error)
	})
	if !ok {
		return trace.Clock{ErrorNs: -1}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	off, err := cl.Clock(ctx, clockSamples)
	if err != nil {
		c.log.Warn("trace: could not measure the clock against the control plane", "err", err)
		return trace.Clock{ErrorNs: -1}
	}
	return trace.Clock{OffsetNs: int64(off.Offset), ErrorNs: int64(off.Error)}
}

// onSignal writes the trace when a signal that ends the process comes,
// then lets the signal take its course: with this package's
// subscription stopped, Go restores the default action unless the
// program subscribed too.
func (o *observer) onSignal(c *Comm) {
	defer o.done.Done()
	select {
	case sig := <-o.sigs:
		o.write(c, "signal "+sig.String(), false)
		o.writeChildren("signal " + sig.String())
		signal.Stop(o.sigs)
		if s, ok := sig.(syscall.Signal); ok {
			syscall.Kill(os.Getpid(), s)
		}
	case <-o.stop:
		signal.Stop(o.sigs)
	}
}

// SetTracing turns the recording of HCCL_TRACE off and on again between
// calls, for benchmarks that alternate the two within one job (hcclrun
// bench --algos auto,auto+trace): off, the communicator runs exactly as
// without HCCL_TRACE, its observer set aside. Every rank may choose
// alike or not; it changes nothing the others see. It fails without
// HCCL_TRACE, and with HCCL_REPORT (whose tally would lose the calls).
func (c *Comm) SetTracing(on bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.obs
	if o == nil {
		o = c.obsOff
	}
	if o == nil || o.ring == nil || o.tally != nil {
		return fmt.Errorf("rank %d: SetTracing: needs HCCL_TRACE set and HCCL_REPORT not", c.job.Rank)
	}
	c.obs, c.obsOff = nil, o
	if on {
		c.obs, c.obsOff = o, nil
	}
	t := c.tracer()
	c.exec.SetTrace(t)
	c.chans.mu.Lock()
	for _, ch := range c.chans.ch {
		if ch != nil {
			ch.exec.SetTrace(t)
		}
	}
	c.chans.mu.Unlock()
	return nil
}

// tracer is the executors' trace hook: nil when not tracing, so that
// the executor's checks stay nil checks.
func (c *Comm) tracer() executor.Tracer {
	if c.obs == nil || c.obs.ring == nil {
		return nil
	}
	return c.obs
}

// start marks the start of one of the program's calls and returns the
// time, in TraceNow's ticks (never 0, which would tell the executor to
// read the clock).
func (o *observer) start() int64 {
	if !o.live.Load() {
		o.live.Store(true)
	}
	return executor.TraceNow()
}

// Op records one op of the running call (executor.Tracer).
func (o *observer) Op(call *executor.Call, step int, op *plan.Op, bytes int, start, end, wait int64) {
	if !o.live.Load() {
		return
	}
	peer := int32(op.Peer)
	if op.Kind == plan.OpCopy || op.Kind == plan.OpReduce {
		peer = -1
	}
	o.ring.Add(&trace.Event{Kind: trace.KindOp, Coll: call.Desc.Coll, Op: uint8(op.Kind), Step: int16(min(step, math.MaxInt16)), Peer: peer,
		Seq: call.Seq, Bytes: int64(bytes), Start: start, End: end, Extra: wait})
}

// called records call a, run with plan p, cut as sp, as ec, which ended
// with err. The end is the executor's last reading of the clock when one
// executor ran it whole, which saves a reading (a tenth of an 8-byte
// call: docs/performance.md#tracing-overhead). A pair plan's call whose
// ops the executor left to it (Call.TraceWhole) is one KindPair event.
func (o *observer) called(c *Comm, a *call, p *plan.Plan, sp *split, ec *executor.Call, err error) {
	start, end := ec.TraceStart, int64(0)
	whole := o.ring != nil && err == nil && ec.TraceWhole
	if whole {
		end = c.exec.TraceClock()
	}
	if end < start {
		end = executor.TraceNow()
	}
	bytes := int64(a.req.Count * a.dtype.Size())
	if a.req.Coll == plan.ReduceScatter {
		bytes *= int64(a.req.Size)
	}
	if o.tally != nil {
		// In ticks, which close turns into ns.
		o.tally.Add(uint8(a.req.Coll), bytes, time.Duration(end-start), p.Algo)
	}
	if o.ring == nil {
		return
	}
	pair := whole && c.exec.PairTraced()
	last := &o.lastPair
	if pair && last.p == p && last.dtype == a.dtype && last.count == a.req.Count &&
		last.chosen == (c.lastChoice.choice.Algo != nil) && last.predicted == c.lastChoice.choice.Predicted {
		// The last call's event again, but for its number and times.
		ev := o.ring.Slot()
		*ev = last.ev
		ev.Seq, ev.Start, ev.End = ec.Seq, start, end
		return
	}
	kind, tmpl := trace.KindCall, int32(0)
	if pair {
		if tmpl = o.template(p, a.dtype.Size()); tmpl >= 0 {
			kind = trace.KindPair
		} else {
			o.pairOps(ec, start, end) // the ring holds too many templates
		}
	}
	names := trace.Names{Algo: p.Algo}
	var predicted int64
	switch {
	case a.req.Coll == plan.SendRecv:
		names.Why = "point to point"
	case c.lastChoice.choice.Algo != nil && c.lastChoice.choice.Algo.Name() == p.Algo:
		names.Why, predicted = o.why, int64(c.lastChoice.choice.Predicted)
	}
	if names != o.lastNames || !o.named {
		o.lastNames, o.lastName, o.named = names, o.ring.Name(names), true
	}
	// Written in place: the 8-byte calls notice a copy.
	ev := o.ring.Slot()
	*ev = trace.Event{Kind: kind, Coll: uint8(a.req.Coll), DType: uint8(a.dtype), Peer: tmpl, Name: o.lastName,
		Seq: ec.Seq, Bytes: bytes, Start: start, End: end, Extra: predicted}
	if kind == trace.KindPair {
		*last = lastPair{p: p, dtype: a.dtype, count: a.req.Count, chosen: c.lastChoice.choice.Algo != nil,
			predicted: c.lastChoice.choice.Predicted, ev: *ev}
	}
}

// lastPair is the last KindPair event called recorded, and what made
// it: a call that repeats it (the plan, element type and count, the
// selector's choice) is the same event but for its number and times,
// which called writes without working out its names, bytes and template
// again.
type lastPair struct {
	p         *plan.Plan
	dtype     reduce.DType
	count     int
	chosen    bool
	predicted time.Duration
	ev        trace.Event
}

// templateKey is a pair plan's template in the observer's cache: the
// plan held keeps its address from being another plan's.
type templateKey struct {
	p        *plan.Plan
	elemSize int
}

// maxCachedTemplates bounds the observer's cache of templates; past it
// the cache starts again.
const maxCachedTemplates = 1 << 10

// template returns the number in the ring of the template of pair plan
// p's ops run with elements of elemSize bytes (executor.PairOps), -1 if
// the ring has no room for it: the last one's again, else from the
// observer's cache, else made.
func (o *observer) template(p *plan.Plan, elemSize int) int32 {
	k := templateKey{p, elemSize}
	if k == o.lastTemplate && o.lastTemplate.p != nil {
		return o.lastTemplateNum
	}
	n, ok := o.templates[k]
	if !ok {
		o.pairs = executor.PairOps(o.pairs[:0], p, elemSize)
		o.tmpl = o.tmpl[:0]
		for _, op := range o.pairs {
			peer := int32(op.Op.Peer)
			if op.Op.Kind == plan.OpCopy || op.Op.Kind == plan.OpReduce {
				peer = -1
			}
			o.tmpl = append(o.tmpl, trace.PairOp{Op: uint8(op.Op.Kind), When: trace.When(op.When),
				Step: int16(min(op.Step, math.MaxInt16)), Peer: peer, Bytes: int64(op.Bytes)})
		}
		if n = o.ring.Ops(o.tmpl); n < 0 {
			return n
		}
		if o.templates == nil || len(o.templates) == maxCachedTemplates {
			o.templates = map[templateKey]int32{}
		}
		o.templates[k] = n
	}
	o.lastTemplate, o.lastTemplateNum = k, n
	return n
}

// pairOps records the ops of the last template made as KindOp events.
func (o *observer) pairOps(ec *executor.Call, start, end int64) {
	for _, op := range o.tmpl {
		e := trace.Event{Kind: trace.KindOp, Coll: ec.Desc.Coll, Op: op.Op, Step: op.Step, Peer: op.Peer,
			Seq: ec.Seq, Bytes: op.Bytes, Start: start, End: start}
		switch op.When {
		case trace.AtEnd:
			e.Start, e.End = end, end
		case trace.Waited:
			e.End, e.Extra = end, end-start
		}
		o.ring.Add(&e)
	}
}

// write writes the rank's trace file; links says whether the links may
// be listed (not from a failing call, whose links are being shut).
func (o *observer) write(c *Comm, why string, links bool) {
	if o.ring == nil {
		return
	}
	o.wrote.Lock()
	defer o.wrote.Unlock()
	f := &o.file
	events, dropped := o.ring.Snapshot()
	l := o.line()
	f.Fill(events, o.ring.Names(), o.ring.Templates(), l.Line)
	f.TicksErrorNs = l.errNs
	f.Written, f.Dropped = why, dropped
	if links {
		if f.Transports == nil {
			f.Transports = map[string]string{}
		}
		for _, l := range c.Links() {
			f.Transports[strconv.Itoa(o.jobRank(l.Peer))] = l.Transport
		}
	}
	if o.members != nil {
		for i := range f.Ops {
			f.Ops[i].Peer = o.jobRank(f.Ops[i].Peer)
		}
	}
	if err := trace.WriteFile(o.dir, f); err != nil {
		c.log.Warn("trace: could not write the rank's trace", "dir", o.dir, "err", err)
	}
}

// jobRank is the rank in the job of the communicator's peer (-1 for
// none).
func (o *observer) jobRank(peer int) int {
	if o.members == nil || peer < 0 || peer >= len(o.members) {
		return peer
	}
	return o.members[peer]
}

// tickLine is a trace.Line with the larger error of its two readings, in
// ns.
type tickLine struct {
	trace.Line
	errNs int64
}

// line reads the trace's clock against Now again and returns the line
// through that reading and the observer's first, at least a millisecond
// apart so that the rate is known to a part in ten thousand, with its
// error in ns.
func (o *observer) line() (l tickLine) {
	if d := time.Duration(executor.Now() - o.cal.Ns); d < time.Millisecond {
		time.Sleep(time.Millisecond - d)
	}
	b := executor.Calibrate()
	l.Line = trace.LineThrough(o.cal.Ticks, o.cal.Ns, b.Ticks, b.Ns)
	l.errNs = l.Dur(max(o.cal.ErrTicks, b.ErrTicks))
	return l
}

// failed writes the trace after a failed call.
func (o *observer) failed(c *Comm) { o.write(c, "failure", false) }

// closeObserver closes the communicator's observer, set aside or not.
func (c *Comm) closeObserver() {
	if o := cmp.Or(c.obs, c.obsOff); o != nil {
		o.close(c)
	}
}

// close writes the trace and sends the report summary, at Close, while
// the links and the control connection are still open.
func (o *observer) close(c *Comm) {
	if o.ring != nil {
		if c.brokenErr() == nil {
			end := o.measureClock(context.Background(), c)
			o.file.ClockEnd = &end
		}
		o.write(c, "close", true)
		if o.root != nil {
			o.root.kidsMu.Lock()
			delete(o.root.kids, o)
			o.root.kidsMu.Unlock()
		} else {
			o.writeChildren("close of the job's communicator")
			close(o.stop)
			o.done.Wait()
		}
	}
	if o.tally != nil {
		sum, l := o.tally.Summary(c.job.Rank), o.line()
		for i := range sum.Stats {
			sum.Stats[i].TotalNs = l.Dur(sum.Stats[i].TotalNs)
		}
		b, err := json.Marshal(sum)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err = c.ctl.Put(ctx, ReportKey+strconv.Itoa(c.job.Rank), b)
			cancel()
		}
		if err != nil {
			c.log.Warn("report: could not send the rank's summary", "err", fmt.Errorf("rank %d: %w", c.job.Rank, err))
		}
	}
}

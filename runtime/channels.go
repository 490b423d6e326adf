package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// Channels, as NCCL's: a call the selector gives C > 1 channels runs as C
// pipelines at once, each over a link set of its own (linkTag(comm, ch):
// its own shm rings or TCP sockets to every peer) with an executor of its
// own, each moving a contiguous range of the call's elements with its own
// segments. Channel 0 is the communicator's links and executor and runs on
// the calling goroutine; the others are made on their first call and run
// on goroutines of their own, joined before the call returns. Every
// channel's frames carry the call's sequence number and descriptor (the
// whole count), so a rank whose peer called otherwise still fails with
// ErrMismatch on channel 0.
//
// Only the collectives whose result is elementwise over one buffer are
// split (selector.Channelled: AllReduce, Broadcast, Reduce): a range of
// elements is then a collective of its own, exactly. The split is a
// function of the call's count and the selector's choice, which is a
// function of the call's global size, so every rank cuts alike; the
// selector gives no call more channels than it has elements of 8 bytes,
// so every channel has elements to move (a call of fewer elements than
// channels, which Comm.cut still handles, runs on one per element).
//
// The first failure on any channel fails the call (Comm.fail), aborts the
// job and shuts every channel's links, which frees the others' blocked
// transfers.

// split is a call cut over channels: channel i runs plans[i] over the
// elements [off[i], off[i+1]) of the call's buffers. n is 0 for calls
// that bring their own plan (point to point), 1 for one channel.
type split struct {
	n     int
	seg   int // the selector's segment, in bytes (executor.Call.Segment)
	plans [maxLinkSets]*plan.Plan
	off   [maxLinkSets + 1]int
}

// channel is one of a communicator's channels beyond the first.
type channel struct {
	links *linkSet
	exec  *executor.Executor
}

// channels is a communicator's channels beyond the first.
type channels struct {
	// mu guards ch and shut against the abort, which shuts every
	// channel's links from whatever goroutine failed.
	mu   sync.Mutex
	ch   [maxLinkSets]*channel // [0] stays nil: the Comm's own
	shut bool
	// the running call's, for the channels' goroutines (runChannels)
	wg    sync.WaitGroup
	ctx   context.Context
	ec    executor.Call
	plans [maxLinkSets]*plan.Plan
	bufs  [maxLinkSets]executor.Buffers
	errs  [maxLinkSets]error
}

// cut fills sp with the channels of call a, which the selector gave nc
// channels and algorithm alg, planning each range.
func (c *Comm) cut(a *call, alg plan.Algorithm, nc int, sp *split) error {
	count := a.req.Count
	if !selector.Channelled(a.req.Coll) || count < 2 {
		nc = 1
	}
	nc = min(nc, count, maxLinkSets)
	sp.n = max(nc, 1)
	per, rem := count/sp.n, count%sp.n
	for i := range sp.n {
		share := per
		if i < rem {
			share++
		}
		sp.off[i+1] = sp.off[i] + share
		req := a.req
		if sp.n > 1 {
			req.Count = share
		}
		p, err := c.plans.get(alg, &req)
		if err != nil {
			return err
		}
		sp.plans[i] = p
	}
	return nil
}

// channel returns channel i (i >= 1), making its link set and executor
// on first use.
func (c *Comm) channel(i int) (*channel, error) {
	cs := &c.chans
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if ch := cs.ch[i]; ch != nil {
		return ch, nil
	}
	l := c.links
	set, err := newLinkSet(l.board, linkTag(l.tag>>tagChannelBits, i), l.members, l.rank)
	if err != nil {
		return nil, fmt.Errorf("open channel %d: %w", i, err)
	}
	if cs.shut {
		set.shut() // an abort came first: the call fails on its links
	}
	ch := &channel{links: set, exec: executor.New(l.rank, set, c.execConfig())}
	cs.ch[i] = ch
	return ch, nil
}

// segmentLimit is the most the executor cuts a transfer into: the
// selector may choose smaller segments, never larger.
func segmentLimit(knobs tunables, ringBytes int) int64 {
	if seg := segmentBytes(knobs.BuffSize, ringBytes); seg > 0 {
		return int64(seg)
	}
	return executor.DefaultSegmentBytes
}

// execConfig is how the communicator's executors run: segments from
// HCCL_BUFFSIZE and the rings, failures reported at once to c.fail.
func (c *Comm) execConfig() executor.Config {
	b := c.links.board
	return executor.Config{SegmentBytes: segmentBytes(c.knobs.BuffSize, b.ringBytes), OnFailure: c.fail, Poll: b.poll,
		Where: c.whereWord(), Trace: c.tracer()}
}

// runChannels runs call a, cut as sp, on its channels at once. What the
// channels' goroutines read is kept in c.chans, not captured: a closure
// over a would move every call's description to the heap, channelled or
// not.
func (c *Comm) runChannels(ctx context.Context, a *call, sp *split, ec executor.Call) error {
	cs := &c.chans
	cs.ctx, cs.ec = ctx, ec
	es := a.dtype.Size()
	for i := range sp.n {
		from, to := sp.off[i]*es, sp.off[i+1]*es
		cs.bufs[i] = executor.Buffers{Send: a.send[from:to]}
		if len(a.recv) > 0 { // a Reduce's recv is nil off the root
			cs.bufs[i].Recv = a.recv[from:to]
		}
		cs.plans[i] = sp.plans[i]
		cs.errs[i] = nil
	}
	for i := 1; i < sp.n; i++ {
		ch, err := c.channel(i)
		if err != nil {
			c.fail(err)
			cs.wg.Wait()
			return c.cur.failed.Load()
		}
		cs.wg.Add(1)
		go c.runChannel(ch, i)
	}
	if cs.errs[0] = c.exec.Run(ctx, sp.plans[0], ec, cs.bufs[0]); cs.errs[0] != nil {
		c.fail(cs.errs[0])
	}
	cs.wg.Wait()
	cs.ctx = nil
	clear(cs.bufs[:sp.n]) // keep no caller's buffer
	for i := range sp.n {
		if cs.errs[i] != nil {
			return cs.errs[i]
		}
	}
	return nil
}

// runChannel runs channel i's share of the running call on ch.
func (c *Comm) runChannel(ch *channel, i int) {
	cs := &c.chans
	defer cs.wg.Done()
	if cs.errs[i] = ch.exec.Run(cs.ctx, cs.plans[i], cs.ec, cs.bufs[i]); cs.errs[i] != nil {
		c.fail(cs.errs[i])
	}
}

// linkSets calls f on the link set of every channel open, channel 0's
// first, under the channels' lock.
func (c *Comm) linkSets(f func(ch int, s *linkSet)) {
	cs := &c.chans
	cs.mu.Lock()
	defer cs.mu.Unlock()
	f(0, c.links)
	for i, ch := range cs.ch {
		if ch != nil {
			f(i, ch.links)
		}
	}
}

// shutLinks shuts the links of every channel, for an abort: blocked
// calls on any of them fail, and a channel opened later starts shut.
func (c *Comm) shutLinks() {
	c.linkSets(func(_ int, s *linkSet) {
		c.chans.shut = true
		s.shut()
	})
}

// closeChannels closes the channels beyond the first, when no collective
// runs.
func (c *Comm) closeChannels() error {
	cs := &c.chans
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var errs []error
	for i, ch := range cs.ch {
		if ch != nil {
			errs = append(errs, ch.links.close())
			ch.exec.Close()
			cs.ch[i] = nil
		}
	}
	return errors.Join(errs...)
}

// warmLinks reads the pages of every channel's shm links ahead
// (linkSet.warmShm).
func (c *Comm) warmLinks() {
	c.linkSets(func(_ int, s *linkSet) { s.warmShm() })
}

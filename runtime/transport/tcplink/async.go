package tcplink

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// A started send (transport.AsyncSender) is written by whoever gets to it
// first, so that no goroutine of its own has to be woken for it:
//
//  1. StartSend writes what the socket takes at once, and registers the
//     link as unfinished if anything is left;
//  2. a read that finds its socket empty, on any link of the link's
//     Group (a rank's links: Config.Group), writes what the group's
//     unfinished links' sockets take while it spins (Group.progress); it
//     is how the ranks of a ring step, each sending to one neighbour and
//     receiving from the other, keep both directions moving on one
//     goroutine;
//  3. a read that is about to park (its spin is over, or it has none)
//     wakes the group's unfinished links' flushers first
//     (Group.handOff): a goroutine per link that writes the rest,
//     waiting for the socket as a plain Send does. Without it two ranks
//     that both filled their sockets and went to read from a third would
//     wait for ever;
//  4. WaitPosted writes what is left on the calling goroutine, or waits
//     for the flusher that has it.
//
// A rank whose step also waits on a transport whose waits do not write
// here (shared memory) hands its started sends to the flushers at once
// (Background), so that they go on while it waits.
//
// A link's started send is guarded by asyncSend.mu: whoever writes to the
// socket holds it (Send too, which first finishes a started send so that
// frames stay in order). Readers only ever TryLock it, so a reader never
// waits for a writer.
type asyncSend struct {
	mu     sync.Mutex
	busy   atomic.Bool // a started send is not written whole; set under mu
	failed atomic.Bool // err is set; set under mu

	ctx   context.Context // of StartSend, for the flusher's waits
	h     wire.Header     // the transfer's header: Offset of p[0], Len(p)
	p     []byte          // the transfer's payload
	next  int             // offset in p of the next frame
	fresh bool            // no frame of the send has been readied yet
	bufs  [][]byte        // what is left of the current frame (in vec)
	vec   [2][]byte
	err   error // the first write error: the link is unusable after it

	registered bool          // in the group's links; guarded by the group's mu
	flusher    bool          // the flusher goroutine runs; guarded by the group's mu
	wake       chan struct{} // the flusher's signal, buffered
}

// Group is the links one rank reads and writes on one goroutine: the
// links of a communicator, whose reads write each other's started sends
// (asyncSend). It lists those of its links with a started send that is
// not written whole; links leave the list lazily, when a look finds them
// done, so that finishing a send never takes the list's lock. The zero
// value is an empty group; a Group must not be copied once used.
type Group struct {
	n     atomic.Int32 // len(links), read without the lock
	mu    sync.Mutex
	links []*Link
}

// StartSend implements transport.AsyncSender: it writes h and p in frames
// of frameBytes, as far as the socket takes them now, and leaves the rest
// to the process's reads and the link's flusher (see asyncSend).
func (l *Link) StartSend(ctx context.Context, h *wire.Header, p []byte) error {
	if int(h.Len) != len(p) {
		return fmt.Errorf("tcplink: header says %d bytes, payload has %d", h.Len, len(p))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.poll == nil {
		return l.Send(ctx, h, p) // a connection without a socket: no way to try
	}
	a := &l.async
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := l.finish(ctx); err != nil {
		return err
	}
	a.ctx, a.h, a.p, a.next, a.fresh, a.bufs = ctx, *h, p, 0, true, nil
	a.busy.Store(true)
	if l.progress() {
		return l.wrap(ctx, "send to", a.err)
	}
	l.group.register(l)
	return nil
}

// WaitPosted implements transport.PostWaiter: it returns when the started
// send is written whole, writing the rest itself unless the flusher is at
// it.
func (l *Link) WaitPosted(ctx context.Context) error {
	a := &l.async
	if !a.busy.Load() && !a.failed.Load() {
		return nil // nothing started, or written whole: no lock on the way
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return l.finish(ctx)
}

// finish writes what is left of the started send, waiting for the socket
// as Send does, and returns the started send's error. The caller holds
// a.mu.
func (l *Link) finish(ctx context.Context) error {
	a := &l.async
	if a.busy.Load() {
		defer l.watch(ctx)()
		for !l.progress() {
			// The socket is full: write the rest of this frame as Send
			// does, spinning and then parking on the poller.
			_, err := l.poll.writev(a.bufs)
			a.bufs = nil
			if err != nil {
				a.done(err)
			}
		}
	}
	return l.wrap(ctx, "send to", a.err)
}

// progress writes what the socket takes now of the started send, without
// waiting, and reports whether the send is over: written whole, or
// failed (a.err). The caller holds a.mu.
func (l *Link) progress() (over bool) {
	a := &l.async
	for a.busy.Load() {
		if len(a.bufs) == 0 && !a.nextFrame(l) {
			a.done(nil)
			break
		}
		n, err := l.poll.tryWritev(a.bufs)
		if err != nil {
			a.done(err)
			break
		}
		if n == 0 {
			return false
		}
		a.bufs = consume(a.bufs, n)
	}
	return true
}

// nextFrame readies the next frame of the started send in a.bufs; false
// when there is none. An empty send is one frame, a header alone. Small
// frames are copied behind their header, so that they go out in one
// piece.
func (a *asyncSend) nextFrame(l *Link) bool {
	if a.next >= len(a.p) && !a.fresh {
		return false
	}
	a.fresh = false
	n := min(frameBytes, len(a.p)-a.next)
	h := a.h
	h.Offset += uint64(a.next)
	h.Len = uint32(n)
	h.Encode(l.sendHdr[:])
	if n <= smallFrame {
		m := copy(l.sendHdr[wire.HeaderSize:], a.p[a.next:a.next+n])
		a.vec = [2][]byte{l.sendHdr[:wire.HeaderSize+m]}
		a.bufs = a.vec[:1]
	} else {
		a.vec = [2][]byte{l.sendHdr[:wire.HeaderSize], a.p[a.next : a.next+n]}
		a.bufs = a.vec[:]
	}
	a.next += n
	return true
}

// done ends the started send, with err if it failed. The caller holds
// a.mu.
func (a *asyncSend) done(err error) {
	if err != nil && a.err == nil {
		a.err = err
		a.failed.Store(true)
	}
	a.ctx, a.p, a.bufs, a.vec = nil, nil, nil, [2][]byte{} // keep nothing of the caller's alive
	a.busy.Store(false)
}

// consume drops the first n bytes of bufs, and the empty buffers then at
// its front.
func consume(bufs [][]byte, n int) [][]byte {
	for n > 0 {
		k := min(n, len(bufs[0]))
		bufs[0], n = bufs[0][k:], n-k
		if len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
	}
	for len(bufs) > 0 && len(bufs[0]) == 0 {
		bufs = bufs[1:]
	}
	return bufs
}

// register adds l to the group's unfinished links. The caller holds
// l.async.mu.
func (g *Group) register(l *Link) {
	g.mu.Lock()
	if !l.async.registered {
		l.async.registered = true
		g.links = append(g.links, l)
		g.n.Store(int32(len(g.links)))
	}
	g.mu.Unlock()
}

// progress writes what the sockets take now of every started send of the
// group that no other goroutine is writing. A read calls it while it
// spins on a socket with nothing to read.
func (g *Group) progress() {
	if g.n.Load() == 0 {
		return
	}
	g.each(func(l *Link) {
		if l.async.mu.TryLock() {
			l.progress()
			l.async.mu.Unlock()
		}
	})
}

// handOff wakes the flusher of every link of the group with a started
// send not written whole: a read calls it before it parks, after which
// nothing on this goroutine writes until the read returns.
func (g *Group) handOff() {
	if g.n.Load() == 0 {
		return
	}
	g.each(func(l *Link) { l.wakeFlusher() })
}

// Background implements transport.AsyncSender: the flusher takes what is
// left of the started send, if anything is.
func (l *Link) Background() {
	if !l.async.busy.Load() {
		return
	}
	l.group.mu.Lock()
	l.wakeFlusher()
	l.group.mu.Unlock()
}

// wakeFlusher starts the link's flusher the first time, and signals it.
// The caller holds the group's mu, which guards a.flusher.
func (l *Link) wakeFlusher() {
	a := &l.async
	if !a.flusher {
		a.flusher = true
		go l.flush()
	}
	select {
	case a.wake <- struct{}{}:
	default: // already signalled
	}
}

// each calls fn, under g.mu, for each link whose send is not over, and
// drops the others from the list.
func (g *Group) each(fn func(l *Link)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	kept := g.links[:0]
	for _, l := range g.links {
		if l.async.busy.Load() {
			fn(l)
		}
		if l.async.busy.Load() {
			kept = append(kept, l)
		} else {
			l.async.registered = false
		}
	}
	clear(g.links[len(kept):])
	g.links = kept
	g.n.Store(int32(len(kept)))
}

// flush is the link's flusher: woken by Group.handOff, it writes the
// rest of the started send, waiting for the socket, until the link
// closes.
func (l *Link) flush() {
	a := &l.async
	for {
		select {
		case <-a.wake:
		case <-l.closed:
			return
		}
		a.mu.Lock()
		if a.busy.Load() {
			l.finish(a.ctx) // its error stays in a.err for WaitPosted
		}
		a.mu.Unlock()
	}
}

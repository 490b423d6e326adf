package shm

import (
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The first touch of every page of a segment should happen when it is
// mapped, not inside a collective.
//
// MADV_POPULATE_WRITE (Linux 5.14) fills this process's page
// tables, and on bare metal or hardware-assisted virtualisation that is the
// whole cost. Under shadow paging (PVM, which these machines run, and other
// software MMUs) the hypervisor builds its own table lazily, per process, and
// the first access of each page after populate still traps: about 5 us a
// page, 6 ms for a 4 MiB ring. A fresh job used to pay it inside its first
// collectives: the first 4 MiB through each ring ran 20-40x slower than the
// rest (a 64 KiB AllReduce at np=2 took ~450 us for 64 calls, then 10 us).
// So every page is read once. Reading, not writing: the peer may already be
// using the memory, and a read is enough for later writes to run at full
// speed.
//
// Populating and reading 4 MiB costs milliseconds (populating an 8 MiB
// link segment took 3.5 ms, on both sides of a link, one after the other),
// and a job opens its links inside its first collective (or its startup
// Barrier), so only the head of the mapping is populated and read at once;
// a goroutine does the rest while the link is already in use. A page the ring reaches before the goroutine does costs what it
// always did, once.
//
// That goroutine must not hold the process's processor for long: a rank
// bound to one CPU runs with GOMAXPROCS=1, and Go preempts a running
// goroutine only after 10 ms. While it read 1 MiB at a time without a
// pause, the goroutine that waited for the peer's answer on the link's
// socket (the dialer's acknowledgement, the listener closing at Close)
// waited with it: `hcclrun -np 2` of Init, Barrier and Close spent 13 ms
// between the listener's acknowledgement and the dialer seeing it, and the
// slowest of a job's first AllReduces (its links' set-up included) took
// 18-23 ms (2026-12-05, the AMD host). So
// it works in pieces of populateStep and sleeps between them: a sleep,
// unlike runtime.Gosched, lets the scheduler look at the network poller,
// where those goroutines wait.

// prefaultNow is how many bytes of a mapping are read before it is handed
// out: the ring headers and the first frames of a fresh link.
const prefaultNow = 256 << 10

// prefaulter reads the tail of a mapping in the background.
type prefaulter struct {
	mem  []byte
	next atomic.Int64 // the offset the goroutine reads next
	quit atomic.Bool
	done chan struct{}
	lazy bool // nothing was read ahead (lazyPrefault)
}

// startPrefault populates the page tables of mem's head and reads it, and
// starts doing the same for the rest. The caller must stop it before
// unmapping mem.
func startPrefault(mem []byte) *prefaulter {
	head := min(len(mem), prefaultNow)
	populate(mem[:head])
	touchPages(mem[:head])
	p := &prefaulter{mem: mem, done: make(chan struct{})}
	p.next.Store(int64(head))
	go func() {
		defer close(p.done)
		for off := head; off < len(mem) && !p.quit.Load(); off += populateStep {
			chunk := mem[off:min(len(mem), off+populateStep)]
			populate(chunk)
			touchPages(chunk)
			p.next.Store(int64(off + len(chunk)))
			time.Sleep(time.Microsecond) // a pause for the others (above)
		}
	}()
	return p
}

// lazyPrefault is the prefaulter of a mapping whose pages fault in at their
// first touch (Options.Lazy): nothing runs, and finish reads it all.
func lazyPrefault(mem []byte) *prefaulter {
	p := &prefaulter{mem: mem, lazy: true, done: make(chan struct{})}
	close(p.done)
	return p
}

// populateStep is how much of a mapping the background prefaulter
// populates and reads between two pauses (startPrefault): 16 pages, under
// a millisecond where a first touch traps to the hypervisor.
const populateStep = 64 << 10

// populate fills the page tables for mem with writable entries
// (MADV_POPULATE_WRITE, Linux 5.14). Errors are ignored: the reads that
// follow fault the pages in without it, and on tmpfs a read fault maps a
// shared page writable.
func populate(mem []byte) { _ = unix.Madvise(mem, unix.MADV_POPULATE_WRITE) }

// stop ends the background reads and waits for them; it is idempotent.
func (p *prefaulter) stop() {
	if p == nil {
		return
	}
	p.quit.Store(true)
	<-p.done
}

// finish stops the background reads and does what they left at once, in
// the caller's goroutine. A busy rank with GOMAXPROCS=1 gives the
// goroutine a turn only when Go preempts the rank's work, every 10 ms
// (the 128 pieces of an 8 MiB segment: over a second by that count; a
// first version of the runtime's timed choice, posttune.go, waited 1024
// calls for them); a caller that wants the whole mapping warm now pays the
// rest itself. The caller must hold the mapping.
func (p *prefaulter) finish() {
	if p == nil {
		return
	}
	p.stop()
	if rest := p.mem[min(int(p.next.Load()), len(p.mem)):]; len(rest) > 0 {
		populate(rest)
		touchPages(rest)
		p.next.Store(int64(len(p.mem)))
	}
}

// touchPages reads one byte of every page of mem. The background
// prefaulter calls it a piece at a time and looks at its quit flag
// between pieces.
func touchPages(mem []byte) {
	page := os.Getpagesize()
	var sink byte
	for i := 0; i < len(mem); i += page {
		sink += mem[i]
	}
	prefaultSink.Store(uint32(sink))
}

// prefaultSink keeps the compiler from dropping touchPages's reads.
var prefaultSink atomic.Uint32

package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// Payloads handed over in place.
//
// A producer may send a large payload without copying it into the ring: it
// commits a reference to the payload in its own memory instead, and the
// consumer copies the payload straight out of the producer's process with
// ReadProcess (process_vm_readv; Open MPI's vader calls this CMA). One copy
// instead of two, and the producer's core does none of it. What the ring
// carries is the caller's business (shmlink frames the reference); this
// file gives the two sides what they need around it:
//
//   - the producer publishes where the ring's header lies in its address
//     space (PublishAddr); the consumer proves once that it may read the
//     producer's memory by reading that word back (ProbeProducer), which
//     marks the ring (Direct) so that the producer knows it may hand over;
//   - the consumer acknowledges every payload it has read (Ack), and the
//     producer waits for the acknowledgements (AwaitAcks) before it lets
//     the caller reuse the memory.

// ErrNotDirect says the consumer cannot read the producer's memory: the
// kernel refused (ptrace restrictions, another user, no CMA), or the word it
// read back was not the producer's.
var ErrNotDirect = errors.New("shm: cannot read the producer's memory")

// PublishAddr records, for the consumer, the address of the ring's header in
// this process; the producer calls it once, before the consumer probes.
func (r *Ring) PublishAddr() { r.prodAddr.Store(Addr(r.hdr)) }

// ProbeProducer checks that this process, the consumer, can read the memory
// of the producer, process pid: it reads the producer's published header
// address from the producer's own mapping and compares it with its own
// view of the same word. On success it marks the ring Direct.
func (r *Ring) ProbeProducer(pid int) error {
	addr := r.prodAddr.Load()
	if addr == 0 {
		return fmt.Errorf("%w: the producer published no address", ErrNotDirect)
	}
	var got [8]byte
	if err := ReadProcess(pid, got[:], addr+offProdAddr); err != nil {
		return fmt.Errorf("%w: %w", ErrNotDirect, err)
	}
	if v := binary.LittleEndian.Uint64(got[:]); v != addr {
		return fmt.Errorf("%w: read %#x at %#x in process %d, want %#x", ErrNotDirect, v, addr+offProdAddr, pid, addr)
	}
	r.direct.Store(1)
	return nil
}

// Direct reports whether the consumer proved that it can read the
// producer's memory (ProbeProducer).
func (r *Ring) Direct() bool { return r.direct.Load() == 1 }

// Ack tells the producer that the consumer has read one more payload handed
// over in place, and wakes the producer if it sleeps for that.
func (r *Ring) Ack() {
	r.acked.Add(1)
	wake(r.ackWaiting, r.ackEv)
}

// AwaitAcks waits until the consumer has acknowledged n payloads in all
// (the producer counts what it handed over), or the ring closes, or ctx
// ends. Acknowledgements that arrived before a close still count. Meanwhile
// it writes the pieces of the payloads that the consumer offers (share.go)
// with write, unless write is nil.
func (r *Ring) AwaitAcks(ctx context.Context, n uint64, write ShareWriter) error {
	s := sleeper{ev: r.ackEv, waiting: r.ackWaiting, counter: r.acked, want: n}
	progress := func() bool { return r.acked.Load() >= n }
	if write != nil {
		s.also = r.shareOffered
		progress = func() bool { return r.acked.Load() >= n || r.shareOffered() }
	}
	for r.acked.Load() < n {
		if write != nil && r.shareOffered() {
			r.takeShares(write)
			continue
		}
		if r.closed.Load() != 0 || r.local.Load() {
			return r.closedErr()
		}
		if err := r.wait(ctx, &s, progress); err != nil {
			return err
		}
	}
	return nil
}

// Closed reports whether either side has closed or aborted the ring. A
// consumer that read a payload in place checks it afterwards: a producer
// whose call failed closes its rings before its caller may reuse the
// memory, so a read that ends before the close saw the payload intact.
func (r *Ring) Closed() bool { return r.closed.Load() != 0 }

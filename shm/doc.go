// Package shm provides what ranks of one server need to move bytes through
// shared memory: segments that never outlive the job, single-producer
// single-consumer byte rings inside them, and waiting that spins briefly and
// then sleeps on a shared futex. It knows nothing of collectives, frames or
// ranks; runtime/transport/shmlink builds a transport link on top of it.
//
// # Segments that never leak
//
// A segment is a file in a tmpfs (/dev/shm) created with O_TMPFILE|O_EXCL
// and mode 0600: it never has a name, so nothing of ours remains in /dev/shm
// after any exit, kill -9 included, whenever it strikes. Only where the
// kernel or the file system refuses O_TMPFILE is the file created under a
// fresh name, "hcclrun-PID-RANDOM", and unlinked right after the open. The
// file lives on as long as a descriptor or a mapping refers to it. The creator passes the descriptor to the local peer over a unix socket
// (SCM_RIGHTS, see [Segment.Send] and [Receive]); the peer maps the received
// descriptor. A tmpfs file is used rather than memfd_create so that the size
// limit of /dev/shm, which the administrator set for shared memory, is the
// limit that applies and is checked ([CheckSpace]).
//
// Segments are sized with fallocate, so that a full tmpfs fails at creation
// with ENOSPC instead of with SIGBUS at the first touch in the middle of a
// collective, and every page is put in the page tables of each process that
// maps it. Under a hypervisor that traps a first touch even after the page
// tables were populated, it still costs microseconds a page, so the user
// reads them all before it needs them warm ([Segment.Prefault];
// prefault.go).
//
// # Rings
//
// A [Ring] is a single-producer single-consumer byte ring laid out in a part
// of a segment: a header page with the producer's and the consumer's counters
// on separate cache lines, then a data area whose capacity is a power of two.
// The producer reserves space in place and commits it ([Ring.Reserve],
// [Ring.Commit], or [Ring.Write]); the consumer sees readable bytes in place
// ([Ring.Peek]) so that it can reduce straight from the ring into its
// destination, then releases them ([Ring.Release], or [Ring.Read]).
//
// Beside its data area, a ring's header page holds 16 fast boxes: slots of
// 128 bytes, each with an announcing word next to a frame of up to
// [FastFrameMax] bytes ([Ring.FastSlot], [Ring.CommitFast]). The consumer
// learns of a boxed frame and fetches it in one cache-line transfer where
// the ring needs about twice as many (fastbox.go).
// Frames stay in order across the two ways: each box records where the
// ring stood when it was posted, and [Ring.NextFrame] says which way the
// next frame comes.
//
// A payload may also stay in the producer's memory, handed over by
// reference: the consumer copies it out with process_vm_readv
// ([ReadProcess]) and acknowledges it ([Ring.Ack], [Ring.AwaitAcks];
// direct.go), and may offer the producer a share of that copy, pieces the
// producer writes into the consumer's memory while it waits for the
// acknowledgement ([Ring.OfferShare]; share.go).
//
// # Regions
//
// A [Region] is memory a process hands out for its own use (runtime's
// MemAlloc) that its peers on the host can map as well: a tmpfs file,
// created without a name like a segment's, that a peer reopens through
// /proc/PID/fd and maps read-only ([PeerRegions]), checking its device
// and inode.
// A payload handed over by reference from a region ([FindRegion]) is
// copied out of the consumer's own mapping, a user-space copy that costs a
// fraction of process_vm_readv's (region.go).
//
// # Waiting
//
// A side that must wait follows the [WaitPolicy] it was opened with
// ([NewRing], [OpenRing]): it spins for a while (yielding to the process's
// other goroutines between checks), may then give the processor away
// between checks (sched_yield, for a host with more ranks than cores), and
// then announces that it sleeps and blocks in FUTEX_WAIT on a 32-bit event
// word in the segment. The policy is the caller's, per side of a ring, so
// that the process's communicators each wait as they chose; the zero
// policy is a short, always-safe spin. The futex is shared (no
// FUTEX_PRIVATE_FLAG) because the two sides are different processes. The
// other side issues FUTEX_WAKE only when the sleeper announced itself, so
// the fast path makes no system call. A sleeper may also say how far the
// other side's counter must move before waking it is worth a system call
// ([Ring.PeekNeed], [Ring.ReserveNeed]; Read and Write do it for the rest
// of their buffer), so that a large transfer pays a few wake-ups instead of
// one per piece. A sleeper wakes periodically (the policy's WakePeriod, at
// least [WakePeriod]) to notice a cancelled context or a dead peer, so eight
// ranks on two cores make progress without burning a core each.
//
// # Peer death
//
// A ring carries a closed flag that [Ring.Close] sets. A peer killed with
// SIGKILL cannot set it, so the unix socket that carried the descriptor is
// kept open as a liveness channel: [Watch] reads it until EOF or an error
// and then aborts the rings, which wakes a blocked side at once.
//
// # Concurrency
//
// A Ring has one producer and one consumer, each in one goroutine at a time
// (usually in different processes). Close and Abort may be called from any
// goroutine at any time. Unmapping a segment ([Segment.Close]) while a ring
// in it is in use is the caller's bug: the caller must first close the rings
// and wait for its goroutines to leave them.
package shm

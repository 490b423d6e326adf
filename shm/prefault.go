package shm

import (
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The first touch of a page of a segment should not happen inside a
// collective, and nothing should read pages nobody will touch.
//
// MADV_POPULATE_WRITE (Linux 5.14) fills this process's page tables, and on
// bare metal or hardware-assisted virtualisation that is the whole cost of
// a first touch. Under shadow paging (software MMUs, as some hypervisors
// have) the hypervisor builds its own table lazily, per process, and the
// first access of each page after populate still traps, microseconds a
// page (docs/measurements.md#first-touch). Reading a page once is enough
// for later writes to run at full speed; a read made by the kernel on the
// process's behalf (process_vm_readv, a pipe) is not.
//
// So a segment's page tables are populated when it is mapped, and its
// pages are read, in the caller's
// goroutine, when its user asks (Segment.Prefault): a link does it as it
// is set up. A goroutine that read the
// segment in the background used to do this; on a rank bound to one CPU
// it ran only in the gaps of the rank's own work, reached the pages after
// the calls that needed them, and took their CPU time besides
// (docs/performance.md, "Warm from the first call").

// populate fills the page tables for mem with writable entries
// (MADV_POPULATE_WRITE, Linux 5.14). Errors are ignored: the reads that
// follow fault the pages in without it, and on tmpfs a read fault maps a
// shared page writable.
func populate(mem []byte) { _ = unix.Madvise(mem, unix.MADV_POPULATE_WRITE) }

// touchPages reads one byte of every page of mem.
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

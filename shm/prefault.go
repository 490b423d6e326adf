package shm

import (
	"os"

	"golang.org/x/sys/unix"
)

// prefault puts every page of mem into this process's page tables, writable.
// MAP_POPULATE already did it for a tmpfs mapping on the kernels we know;
// MADV_POPULATE_WRITE (Linux 5.14) states the intent and covers kernels or
// file systems where the populate was read-only. Where neither exists, a
// read of one byte per page faults the page in (a read fault on a shared
// tmpfs mapping maps the page writable, since tmpfs does not track dirty
// pages). Writing is avoided: the peer may already be using the memory.
func prefault(mem []byte) {
	if len(mem) == 0 {
		return
	}
	if err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE); err == nil {
		return
	}
	page := os.Getpagesize()
	var sink byte
	for i := 0; i < len(mem); i += page {
		sink += mem[i]
	}
	prefaultSink = sink
}

// prefaultSink keeps the compiler from dropping prefault's reads.
var prefaultSink byte

package shm

import (
	"sync/atomic"
	"unsafe"
)

// word64 and word32 view 8- and 4-byte words of a mapping as atomics. The
// ring header puts every word at a multiple of its size within a
// page-aligned mapping, so the atomics are aligned; the two processes see
// the same memory, and the lock-prefixed instructions behind sync/atomic are
// coherent across processes as they are across threads.
func word64(b []byte, off int) *atomic.Uint64 {
	_ = b[off+7]
	return (*atomic.Uint64)(unsafe.Pointer(&b[off]))
}

func word32(b []byte, off int) *atomic.Uint32 {
	_ = b[off+3]
	return (*atomic.Uint32)(unsafe.Pointer(&b[off]))
}

package runtime

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/hcclrun/hcclrun/shm"
)

// MemAlloc returns n elements of memory that the rank's peers on this host
// can map, as NCCL's ncclMemAlloc returns memory fit for registration.
// Collectives take it like any slice; where a large payload is sent from
// it to a peer on the host, the peer copies it out of its own mapping of
// the memory instead of reading this process with process_vm_readv, which
// costs three times as much on this project's VMs (docs/performance.md).
// A job that sends the same large buffers call after call (gradients,
// activations) should allocate them here.
//
// The memory comes zeroed, counts against the shared-memory tmpfs
// (/dev/shm) like the runtime's own segments, and lives until MemFree: the
// garbage collector does not know it. n == 0 returns an empty slice.
func MemAlloc[T Element](n int) ([]T, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: MemAlloc of %d elements", ErrInvalidArgument, n)
	}
	if n == 0 {
		return []T{}, nil
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	if n > math.MaxInt/size {
		return nil, fmt.Errorf("%w: MemAlloc of %d elements of %d bytes", ErrInvalidArgument, n, size)
	}
	r, err := shm.NewRegion(n * size)
	if err != nil {
		return nil, fmt.Errorf("hccl: MemAlloc of %d bytes: %w", n*size, err)
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(r.Bytes()))), n), nil
}

// MemFree frees memory MemAlloc returned (buf must start where MemAlloc's
// slice started). Its memory must not be used again.
func MemFree[T Element](buf []T) error {
	if len(buf) == 0 {
		return nil
	}
	r := shm.RegionAt(asBytes(buf))
	if r == nil {
		return fmt.Errorf("%w: MemFree of memory MemAlloc did not return", ErrInvalidArgument)
	}
	return r.Free()
}

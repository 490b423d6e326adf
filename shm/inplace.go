package shm

import (
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/memcopy"
)

// Whether reading another process's memory pays depends on the machine
// more than on anything else: on the KVM machine of 2026-12-02 one
// process_vm_readv beat the ring's two copies (AllGather 1 MiB at np 2,
// 38.0 us through the rings against 27.9 in place), on the PVM machine of
// the same project (the same CPUs, another hypervisor, which makes the
// kernel's walks of another process's pages slow) it lost: AllGather 1 MiB
// 57-66 us in place against 49-57 through the rings, 16 MiB 1576-2738
// against 1122-1834, AlltoAll 16 MiB 1587-3275 against 1441-1702 (np 2,
// 4 interleaved runs, 2026-12-02 18:30 UTC). There, reading 256 KiB of the
// process's own memory with process_vm_readv took 4.1 times as long as
// copying it in user space (10.0 against 2.45 us, minima of 30; 1 MiB 2.95
// times, 8 MiB 2.38).

// inPlaceRatio is the most process_vm_readv may cost, as a multiple of a
// user-space copy of the same bytes, for an in-place read to be worth it:
// through a ring each byte is copied twice, once by each rank, so the
// break-even is near 2 in theory; the rings' waits and headers move it up,
// and the PVM machine, where in place lost, measured above 4.
const inPlaceRatio = 3

// inPlaceProbeBytes is what InPlacePays copies: the smallest payload
// handed over in place (shmlink's directMin), small enough to stay in the
// cache and to cost little the one time it is measured.
const inPlaceProbeBytes = 256 << 10

var inPlace struct {
	once sync.Once
	pays bool
	copy time.Duration
	read time.Duration
}

// InPlacePays reports whether on this machine one read of another
// process's memory (ReadProcess) costs less than inPlaceRatio copies in
// user space, timing both, once per process, on buffers of its own: the
// first call costs 1-2 ms on the PVM machine, where touching a page for
// the first time costs 5-10 us even when the mapping was populated. A
// process that cannot read its own memory this way gets false. The
// launcher asks, once for a job (launcher/inplace.go): ranks that each
// asked could disagree.
func InPlacePays() bool {
	inPlace.once.Do(measureInPlace)
	return inPlace.pays
}

// InPlaceTimes returns the timings InPlacePays decided on (the fastest of
// several tries each), for logs and tests.
func InPlaceTimes() (copy, read time.Duration) {
	inPlace.once.Do(measureInPlace)
	return inPlace.copy, inPlace.read
}

func measureInPlace() {
	// Populated at once, which halves what faulting the pages in one by
	// one costs on the PVM machine (2 ms).
	mem, err := unix.Mmap(-1, 0, 2*inPlaceProbeBytes, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return // not timed: in place does not pay
	}
	defer unix.Munmap(mem)
	src, dst := mem[:inPlaceProbeBytes], mem[inPlaceProbeBytes:]
	for i := range src {
		src[i] = byte(i)
	}
	pid := os.Getpid()
	addr := uint64(uintptr(unsafe.Pointer(&src[0])))
	const tries = 7
	best := func(f func() error) time.Duration {
		d := time.Duration(1<<63 - 1)
		for range tries {
			start := time.Now()
			if f() != nil {
				return -1
			}
			d = min(d, time.Since(start))
		}
		return d
	}
	inPlace.copy = best(func() error { memcopy.Copy(dst, src); return nil })
	inPlace.read = best(func() error { return ReadProcess(pid, dst, addr) })
	inPlace.pays = inPlace.read >= 0 && inPlace.read < inPlaceRatio*inPlace.copy
}

package shmlink

import (
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/shm"
)

// Whether the pipes pay on this host.
//
// Both ways of reading a payload in place pin the producer's pages and
// copy them once: process_vm_readv pins them from the consumer's side,
// walking the producer's page tables; vmsplice pins them from the
// producer's own side and the consumer's read(2) copies them out of the
// pipe (splice.go). Which costs less is the kernel's and the CPU's
// business, and it differs by host: where the splice and read won by 1.7
// times in one process the pipes took a fifth off a 1 MiB AllGather at
// np 2, and where the two were about even the pipes cost the same
// AllGather time, because in a job the page references the producer's
// splice takes are dropped by the consumer's read on another core, which
// one process does not see (docs/measurements.md#pipes). So the pipes go
// only where they win the probe clearly: by pipesWin.
//
// The probe reads probeBytes probeTries times each way, interleaved, and
// compares the fastest of each: a moment of interference (another rank
// probing on the same core) slows some tries, never speeds one up; the
// fastest tries' ratio held steady where the medians spread.

const (
	probeBytes = 256 << 10
	probeTries = 12
	// pipesWin is how many times faster than process_vm_readv the
	// splice and read must be for the pipes to go on.
	pipesWin = 1.35
)

// PipeProbe is what ProbePipes measured: the fastest time of each way of
// reading Bytes of this process's memory.
type PipeProbe struct {
	Bytes        int
	Spliced      time.Duration // vmsplice into a pipe, read(2) out of it
	ProcessReads time.Duration // process_vm_readv
}

// Pays reports whether payloads read in place should have their heads go
// through pipes (DialConfig.NoPipes when not).
func (p PipeProbe) Pays() bool {
	return p.Spliced > 0 && float64(p.ProcessReads) >= pipesWin*float64(p.Spliced)
}

func (p PipeProbe) String() string {
	return fmt.Sprintf("%d KiB spliced and read in %v, read with process_vm_readv in %v (%.2fx; the pipes go on from %.2fx)",
		p.Bytes>>10, p.Spliced, p.ProcessReads, float64(p.ProcessReads)/float64(max(p.Spliced, 1)), pipesWin)
}

// ProbePipes times both ways of reading a payload in place within this
// process (above), in about a millisecond; an error means one of the two
// does not work here.
func ProbePipes() (PipeProbe, error) {
	p := PipeProbe{Bytes: probeBytes}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return p, fmt.Errorf("pipe for the probe: %w", err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if _, err := unix.FcntlInt(uintptr(fds[1]), unix.F_SETPIPE_SZ, probeBytes); err != nil {
		return p, fmt.Errorf("sizing the probe's pipe: %w", err)
	}
	// Heap slices (longer than any stack variable): the pipe and the
	// system call refer to their addresses.
	src, dst := make([]byte, probeBytes), make([]byte, probeBytes)
	for i := range src {
		src[i] = byte(i)
	}
	self := os.Getpid()
	var spliced, read []time.Duration
	for try := range probeTries + 1 {
		start := time.Now()
		if n := shm.Splice(fds[1], src); n != len(src) {
			return p, fmt.Errorf("vmsplice of %d bytes took %d", len(src), n)
		}
		if err := readPipe(fds[0], dst); err != nil {
			return p, err
		}
		mid := time.Now()
		if err := shm.ReadProcess(self, dst, shm.Addr(src)); err != nil {
			return p, err
		}
		end := time.Now()
		if try > 0 { // the first touches dst's pages for the first time
			spliced, read = append(spliced, mid.Sub(start)), append(read, end.Sub(mid))
		}
	}
	if dst[len(dst)-1] != src[len(src)-1] {
		return p, fmt.Errorf("the probe read %d, want %d", dst[len(dst)-1], src[len(src)-1])
	}
	p.Spliced, p.ProcessReads = slices.Min(spliced), slices.Min(read)
	return p, nil
}

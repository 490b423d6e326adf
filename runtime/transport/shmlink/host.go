package shmlink

import (
	"log/slog"
	"time"

	"github.com/hcclrun/hcclrun/shm"
)

// Host is what a rank's shared-memory links are sized and tuned for: how
// many of the job's ranks share this host, and how many CPUs they share
// (the launcher's binding of the server's ranks, else the rank's
// affinity). The runtime fills it in; its methods are the links' policy.
type Host struct {
	Ranks int
	CPUs  int
}

// YieldCrowd is how many ranks per CPU a host may have for its waiters to
// yield the processor (Host.Wait); beyond it the host is crowded: its
// yielders would outnumber the ranks at work, each yield handing the
// core to another yielder (docs/measurements.md#spin-and-yield).
const YieldCrowd = 8

// lazyCrowd is how many ranks per CPU a host has beyond which its links'
// pages fault in at first touch (Host.LazyRings); up to it they are read
// ahead.
const lazyCrowd = 2

// The waits of Host.Wait.
const (
	spinAlone  = 200 * time.Microsecond // a CPU for every rank: spin
	yieldShare = 100 * time.Microsecond // fewer: yield the CPU between looks
)

func (h Host) cpus() int { return max(h.CPUs, 1) }

// Crowded reports whether the host has more than YieldCrowd ranks per CPU.
func (h Host) Crowded() bool { return h.Ranks > YieldCrowd*h.cpus() }

// Wait returns how the rank's waiters wait (DialConfig.Wait,
// ListenConfig.Wait). With a CPU for every rank of the host they spin for
// 200 us: a sleep costs tens of microseconds of wake-up latency. On an
// oversubscribed host a spinning rank would steal the core its peer needs,
// so it does not spin and yields the processor between checks for 100 us
// instead: the peer it waits for is often next in line for this core. On
// a crowded host it goes to sleep at once, for up to shm.CrowdWakePeriod
// between looks: the periodic wakes of hundreds of sleepers would cost
// the workers their CPU (docs/measurements.md#spin-and-yield).
func (h Host) Wait() shm.WaitPolicy {
	switch {
	case h.Ranks <= h.cpus():
		return shm.WaitPolicy{Spin: spinAlone, WakePeriod: shm.WakePeriod}
	case h.Crowded():
		return shm.WaitPolicy{WakePeriod: shm.CrowdWakePeriod}
	}
	return shm.WaitPolicy{Yield: yieldShare, WakePeriod: shm.WakePeriod}
}

// Shares reports whether the rank's receivers offer shares of their copies
// (share.go; DialConfig.NoShare when not): sharing pays when the sender
// has a core of its own to copy on, and on a host with more ranks than
// cores the two sides would take turns on one.
func (h Host) Shares() bool { return h.Ranks <= h.cpus() }

// RingBytes is the ring of each link when HCCL_BUFFSIZE asks for
// buffSize bytes: shrunk on a crowded host (HostRingBytes) and to let a
// full mesh fit in half of what /dev/shm has free (FitRingBytes).
func (h Host) RingBytes(buffSize int) int {
	ring := HostRingBytes(buffSize, h.Ranks)
	if free, err := shm.StatfsFree(shm.DefaultDir); err == nil {
		ring = FitRingBytes(ring, h.Ranks, free)
	}
	return ring
}

// LazyRings reports whether the links' segments leave their pages to
// fault in at first touch (shm.Options.Lazy) for rings of ringBytes where
// HCCL_BUFFSIZE asked for buffSize: where the rings were shrunk, or the
// ranks outnumber the CPUs lazyCrowd times over, a rank opens links that
// carry little (a Barrier's), and reading them all ahead was most of its
// CPU time, which on shared cores is its peers' too.
func (h Host) LazyRings(ringBytes, buffSize int) bool {
	return ringBytes < HostRingBytes(buffSize, 2) || h.Ranks > lazyCrowd*h.cpus()
}

// CheckSpace fails, with an actionable message, when /dev/shm cannot hold
// the segments of the two links every collective of the host opens first
// (a ring's neighbours), so that the rank fails as it starts instead of in
// the middle of a collective. Links open on first use, and one whose
// segment does not fit then goes over the next transport, so no more is
// asked.
func (h Host) CheckSpace(ringBytes int) error {
	if h.Ranks < 2 {
		return nil
	}
	seg, err := SegmentBytes(ringBytes)
	if err != nil {
		return err
	}
	return shm.CheckSpace(shm.DefaultDir, uint64(min(h.Ranks-1, 2))*uint64(seg), nil)
}

// PipeChoice says whether the links' pipes go on (HCCL_SHM_SPLICE_DISABLE).
type PipeChoice int

const (
	PipesProbed PipeChoice = iota // as this host's probe says (ProbePipes)
	PipesOn                       // whatever the probe says
	PipesOff                      // process_vm_readv alone
)

// WithoutPipes says whether the rank's links go without pipes
// (DialConfig.NoPipes). Unless the choice is made, it probes the host
// (ProbePipes) when payloads are read in place at all: the pipes win on
// some hosts and lose on others, and the probe tells them apart
// (docs/measurements.md#pipes). A probe that fails (a kernel without
// vmsplice or process_vm_readv for this process) leaves the pipes out:
// the links find for themselves whether they may read in place. A crowded
// host goes without pipes and without the probe: there every rank's
// payloads are a small share of the call, and the probe, repeated by
// hundreds of ranks, is a few percent of the job's start-up. The probe's
// result is logged at INFO.
func WithoutPipes(choice PipeChoice, readsInPlace, crowded bool, log *slog.Logger) bool {
	switch {
	case choice == PipesOff:
		return true
	case choice == PipesOn:
		return false
	case !readsInPlace, crowded:
		return true
	}
	p, err := ProbePipes()
	if err != nil {
		log.Info("shm links without pipes: the probe failed", "err", err)
		return true
	}
	log.Info("shm links", "pipes", p.Pays(), "probe", p.String())
	return !p.Pays()
}

package runtime

import (
	"log/slog"

	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
)

// spliceMode is HCCL_SHM_SPLICE_DISABLE: whether the heads of payloads
// read in place go through pipes (shmlink's splice.go).
type spliceMode int

const (
	// spliceProbed, unset: as this host's probe says (pipesOff).
	spliceProbed spliceMode = iota
	spliceOn                // HCCL_SHM_SPLICE_DISABLE=0: pipes whatever the probe says
	spliceOff               // HCCL_SHM_SPLICE_DISABLE=1: process_vm_readv alone
)

// pipesOff says whether this rank's shm links go without pipes. Unless
// the user chose, it probes the host (shmlink.ProbePipes, 0.5-1 ms in a
// fresh process here) when payloads may be read in place at all: the
// pipes took a 1 MiB AllGather at np 2 from 80 to 60 us on the AMD host
// of 2026-12-03 and cost up to 9 us of it on the Intel host of
// 2026-12-04, and the probe tells the two apart (1.7x there, from the
// record in shmlink's splice.go; 1.02-1.08x here). A probe that fails (a
// kernel without vmsplice or process_vm_readv for this process) leaves
// the pipes out: the links find for themselves whether they may read in
// place.
//
// A crowded host (more than yieldCrowd ranks per CPU) goes without pipes
// and without the probe: there every rank's payloads are a small share of
// the call, and the probe, repeated by hundreds of ranks, was a few percent
// of the job's start-up.
func pipesOff(k tunables, localRanks int, crowded bool, log *slog.Logger) bool {
	switch {
	case k.ShmSplice == spliceOff:
		return true
	case k.ShmSplice == spliceOn:
		return false
	case k.ShmDisable || localRanks < 2 || k.shmDirect() == directNone:
		return true // nothing is read in place
	case crowded:
		return true
	}
	p, err := shmlink.ProbePipes()
	if err != nil {
		log.Info("shm links without pipes: the probe failed", "err", err)
		return true
	}
	log.Info("shm links", "pipes", p.Pays(), "probe", p.String())
	return !p.Pays()
}

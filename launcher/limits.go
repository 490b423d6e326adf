package launcher

import (
	"github.com/hcclrun/hcclrun/ranktable"
)

// MaxRanks is the largest job hcclrun runs (ranktable.MaxRanks): it is
// checked before anything is allocated per rank, so that a mistyped -np
// fails at once with a usage error instead of building millions of slots.
const MaxRanks = ranktable.MaxRanks

// crowdedPerCPU is how many ranks per CPU a host may run before the
// launcher warns: past it the ranks mostly wait for a CPU, and start-up and
// every collective crawl, though the job still runs.
const crowdedPerCPU = 64

// checkRanks refuses a job of more than MaxRanks ranks, from np or from
// the hosts' counts, without overflowing on absurd counts.
func checkRanks(np int, hosts []Host) error {
	if np > MaxRanks {
		return Usagef("np is %d, more than the %d ranks a job may have", np, MaxRanks)
	}
	total := 0
	for _, h := range hosts {
		if h.Ranks > MaxRanks-total {
			return Usagef("the hosts hold more than the %d ranks a job may have", MaxRanks)
		}
		total += max(h.Ranks, 0)
	}
	return nil
}

// warnCrowded logs one warning per host of this job that runs more than
// crowdedPerCPU ranks per CPU it may use, when the launcher knows its CPUs
// (this machine, or a remote host whose agent said).
func (r *resolved) warnCrowded() {
	for i := range r.hosts {
		h := &r.hosts[i]
		var cpus int
		where := ""
		switch sp := h.Spawner.(type) {
		case *LocalSpawner:
			if sp.agent {
				continue // its launcher warned
			}
			allowed, err := allowedCPUs()
			if err != nil {
				continue
			}
			cpus, where = len(allowed), sp.Host()
		case *agentSpawner:
			cpus, where = len(sp.cpus), sp.host
		}
		if cpus > 0 && h.Ranks > crowdedPerCPU*cpus {
			r.log.Warn("host heavily oversubscribed: its ranks will mostly wait for a CPU",
				"host", where, "ranks", h.Ranks, "cpus", cpus, "ranks_per_cpu", h.Ranks/cpus)
		}
	}
}

package launcher

import (
	"net"
	"strconv"
)

// PyTorch's env:// rendezvous, which torch.distributed.init_process_group
// uses under torchrun, reads MASTER_ADDR and MASTER_PORT: rank 0 listens
// there (its TCPStore) and every other rank connects. hcclrun gives every
// rank those beside the other variables torchrun sets (RankEnv), so a
// script written for torchrun runs under hcclrun unchanged. MasterEnv's
// variables come before the -x exports, which may override them; the
// rest come after, as the job's identity must not be overridden.

// torchDefaultPort is torchrun's own default MASTER_PORT, for an agent
// that found no free port to report.
const torchDefaultPort = 29500

// MasterEnv returns MASTER_ADDR and MASTER_PORT of job, as "NAME=value".
func MasterEnv(job JobEnv) []string {
	return []string{
		"MASTER_ADDR=" + job.MasterAddr,
		"MASTER_PORT=" + strconv.Itoa(job.MasterPort),
	}
}

// master returns the job's MASTER_ADDR and MASTER_PORT: rank 0's host as
// the other hosts reach it (its address in the rank table, or the host of
// the control plane's advertised address controlAddr when rank 0 runs
// here, which every rank reaches already), and a port that was free there
// when the job started: its agent's report, or one this process finds.
// As with torchrun, the port may be taken between the pick and rank 0's
// listen; -x MASTER_PORT=... chooses another.
func (r *resolved) master(controlAddr string) (string, int) {
	h := r.hosts[r.slots[0].host]
	addr := h.Addr
	if addr == "" {
		addr, _, _ = net.SplitHostPort(controlAddr)
	}
	var port int
	if sp, ok := h.Spawner.(*agentSpawner); ok {
		port = sp.freePort
		if port == 0 {
			port = torchDefaultPort
		}
	} else if p, err := freePort(); err == nil {
		port = p
	} else {
		port = torchDefaultPort
	}
	return addr, port
}

// freePort returns a TCP port that no socket of this host holds now, on
// every address (MASTER_ADDR may be any of them).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

package runtime

import (
	"fmt"
	"log/slog"
	goruntime "runtime"

	"github.com/hcclrun/hcclrun/internal/cpu"
	"github.com/hcclrun/hcclrun/netio"
	"github.com/hcclrun/hcclrun/ranktable"
	"github.com/hcclrun/hcclrun/runtime/executor"
	"github.com/hcclrun/hcclrun/runtime/topo"
	"github.com/hcclrun/hcclrun/runtime/transport"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
	"github.com/hcclrun/hcclrun/runtime/transport/tcplink"
	"github.com/hcclrun/hcclrun/shm"
)

// The rank's table of transports, configured from its knobs. The knobs
// are read in env.go and the policies are the transports' own
// (shmlink.Host, shmlink.WithoutPipes, tcplink.CheckCongestion); what is
// here hands the one to the other, as values each communicator keeps for
// itself.

// spliceMode is HCCL_SHM_SPLICE_DISABLE: whether the heads of payloads
// read in place go through pipes (shmlink's splice.go).
type spliceMode = shmlink.PipeChoice

const (
	spliceProbed = shmlink.PipesProbed // unset: as this host's probe says (pipesOff)
	spliceOn     = shmlink.PipesOn     // HCCL_SHM_SPLICE_DISABLE=0: pipes whatever the probe says
	spliceOff    = shmlink.PipesOff    // HCCL_SHM_SPLICE_DISABLE=1: process_vm_readv alone
)

// transports is a rank's table and what the rest of the runtime needs to
// know of its shared-memory links.
type transports struct {
	table     []transport.Transport // in order of preference: shm (unless off), tcp
	ringBytes int                   // each ring of an shm link (shmlink.Host.RingBytes)
	lazyRings bool                  // shm segments fault in at first touch (shmlink.Host.LazyRings)
	poll      executor.Poll         // how the executor polls several small receives: as the shm waits
}

// transportsFor builds the table of a rank that listens for TCP on ip:
// shared memory first, unless HCCL_SHM_DISABLE or the rank is alone,
// then TCP. serverCPUs is as for newLinkManager.
func transportsFor(job Job, knobs tunables, ip string, facts topo.Facts, serverCPUs int, log *slog.Logger) (transports, error) {
	congestion, err := congestionFor(knobs, log)
	if err != nil {
		return transports{}, err
	}
	host := shmlink.Host{Ranks: job.LocalSize, CPUs: hostCPUs(serverCPUs, facts.CPUs)}
	wait := host.Wait()
	ring := host.RingBytes(knobs.BuffSize)
	ts := transports{ringBytes: ring, lazyRings: host.LazyRings(ring, knobs.BuffSize)}
	noPipes := pipesOff(knobs, job.LocalSize, host.Crowded(), log)
	if !knobs.ShmDisable && job.Size > 1 {
		if job.LocalSize >= 2 {
			if _, err := shmlink.SegmentBytes(ring); err != nil {
				return transports{}, fmt.Errorf("HCCL_BUFFSIZE: %w", err)
			}
		}
		dial := shmlink.DialConfig{
			JobID: job.JobID, Key: job.Key, Self: job.Rank,
			RingBytes: ring, NoDirect: knobs.shmDirect() == directNone,
			PipeBytes: shmlink.PipeBytes(job.LocalSize), NoPipes: noPipes,
			Segment: shm.Options{Lazy: ts.lazyRings},
			Wait:    wait, NoShare: !host.Shares(),
		}
		listen := shmlink.ListenConfig{Tag: knobs.ShmSocketTag, Wait: wait, NoShare: !host.Shares()}
		ts.table = append(ts.table, shmlink.NewTransport(dial, listen, host, log))
		ts.poll = executor.Poll{Spin: wait.Spin, Yield: wait.Yield, Relax: cpu.Pause, YieldProcessor: shm.Yield}
	}
	tcp := tcplink.Config{Spin: wait.Spin, Socket: netio.SocketOptions{Congestion: congestion}}
	ts.table = append(ts.table, tcplink.NewTransport(ip, job.Rank, job.Key, tcp, log))
	return ts, nil
}

// pipesOff says whether this rank's shm links go without pipes
// (shmlink.WithoutPipes): nothing is read in place where shared memory is
// off, the rank has no peer on its host, or HCCL_SHM_DIRECT=0.
func pipesOff(k tunables, localRanks int, crowded bool, log *slog.Logger) bool {
	readsInPlace := !k.ShmDisable && localRanks >= 2 && k.shmDirect() != directNone
	return shmlink.WithoutPipes(k.ShmSplice, readsInPlace, crowded, log)
}

// congestionFor returns the TCP congestion control of the data links
// (HCCL_SOCKET_CONGESTION, tcplink.CheckCongestion), "" for the kernel's
// default: one the kernel refuses fails Init when the user chose it.
func congestionFor(k tunables, log *slog.Logger) (string, error) {
	name, err := tcplink.CheckCongestion(k.SocketCongestion, k.SocketCongestionSet, log)
	if err != nil {
		return "", fmt.Errorf("HCCL_SOCKET_CONGESTION=%s: the kernel refuses it: %w", k.SocketCongestion, err)
	}
	return name, nil
}

// hostCPUs is how many CPUs the ranks of this rank's server share:
// serverCPUs when the launcher bound the ranks (the rank table's CPUs of
// the server; each rank's own affinity is then its share only), else what
// this rank may use (cpuList, its affinity, or runtime.NumCPU, which
// honours it), as the ranks of an unbound host share it.
func hostCPUs(serverCPUs int, cpuList string) int {
	if serverCPUs > 0 {
		return serverCPUs
	}
	if list, err := ranktable.ParseCPUList(cpuList); err == nil && len(list) > 0 {
		return len(list)
	}
	return goruntime.NumCPU()
}

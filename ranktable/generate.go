package ranktable

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"
)

// Spec describes a job for Generate.
type Spec struct {
	JobID       string        // job_id; may be empty
	ControlAddr string        // control_addr (host:port); may be empty
	Handoff     time.Duration // handoff_ns; 0 leaves it out
	Servers     []ServerSpec
}

// ServerSpec is one host of the job, in node order.
type ServerSpec struct {
	// ID is the server_id. Empty means HostAddr, which is what HCCL puts
	// there.
	ID string
	// HostAddr is the IP address the host is reached on; it becomes
	// host_addr and, since CPU ranks have no NIC of their own, every
	// device_ip of the server. Empty leaves both out.
	HostAddr string
	// Ranks is the number of ranks on the host, at least 1.
	Ranks int
	// CPUs, when not empty, are the CPUs the host's ranks may run on. They
	// are dealt out in blocks in the given order: with 8 CPUs and 2 ranks
	// rank 0 gets the first four. With more ranks than CPUs each rank gets
	// one CPU, round robin, so ranks share CPUs evenly.
	CPUs []int
}

// Generate builds the rank table of spec: servers in the given order, ranks
// numbered contiguously per server from 0, device_id and local_rank the
// rank's index on its server. The result is validated.
func Generate(spec Spec) (*Table, error) {
	t := &Table{
		Status:      StatusCompleted,
		Version:     Version,
		ServerCount: strconv.Itoa(len(spec.Servers)),
		ServerList:  make([]Server, len(spec.Servers)),
		JobID:       spec.JobID,
		ControlAddr: spec.ControlAddr,
	}
	if spec.Handoff > 0 {
		t.HandoffNS = strconv.FormatInt(spec.Handoff.Nanoseconds(), 10)
	}
	if len(spec.Servers) == 0 {
		return nil, fmt.Errorf("ranktable: generate: no servers")
	}
	total := 0
	for _, ss := range spec.Servers {
		if ss.Ranks > MaxRanks || total+ss.Ranks > MaxRanks {
			return nil, fmt.Errorf("ranktable: generate: more than the %d ranks a job may have", MaxRanks)
		}
		total += max(ss.Ranks, 0)
	}
	rank := 0
	for i, ss := range spec.Servers {
		if ss.Ranks < 1 {
			return nil, fmt.Errorf("ranktable: generate: server %d (%q) has %d ranks, want at least 1", i, ss.ID, ss.Ranks)
		}
		if ss.HostAddr != "" {
			if _, err := netip.ParseAddr(ss.HostAddr); err != nil {
				return nil, fmt.Errorf("ranktable: generate: server %d: host address %q is not an IP address", i, ss.HostAddr)
			}
		}
		for _, c := range ss.CPUs {
			if c < 0 || c > MaxCPU {
				return nil, fmt.Errorf("ranktable: generate: server %d: cpu %d out of range 0..%d", i, c, MaxCPU)
			}
		}
		id := ss.ID
		if id == "" {
			id = ss.HostAddr
		}
		s := Server{ServerID: id, HostAddr: ss.HostAddr, Devices: make([]Device, ss.Ranks)}
		for j := range s.Devices {
			s.Devices[j] = Device{
				DeviceID:  strconv.Itoa(j),
				DeviceIP:  ss.HostAddr,
				RankID:    strconv.Itoa(rank),
				LocalRank: strconv.Itoa(j),
				CPUList:   FormatCPUList(shareCPUs(ss.CPUs, ss.Ranks, j)),
			}
			rank++
		}
		t.ServerList[i] = s
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("ranktable: generate: %w", err)
	}
	return t, nil
}

// shareCPUs returns local rank j's share of cpus among n ranks: a block of
// len(cpus)/n (the first len(cpus)%n ranks get one more), or, when there are
// fewer CPUs than ranks, the single CPU j mod len(cpus).
func shareCPUs(cpus []int, n, j int) []int {
	if len(cpus) == 0 {
		return nil
	}
	if len(cpus) < n {
		return cpus[j%len(cpus) : j%len(cpus)+1]
	}
	q, r := len(cpus)/n, len(cpus)%n
	start := j*q + min(j, r)
	size := q
	if j < r {
		size++
	}
	return cpus[start : start+size]
}

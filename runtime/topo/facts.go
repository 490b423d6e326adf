package topo

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Facts is what one rank knows about the place it runs in.
type Facts struct {
	Rank     int    `json:"rank"`
	Hostname string `json:"hostname"`
	// Host is the shared-memory identity: equal Host means the two ranks can
	// map the same memory and reach each other's abstract unix sockets.
	Host HostID `json:"host"`
	NICs []NIC  `json:"nics,omitempty"`
	// DataIP is the address the rank's data links listen on.
	DataIP string `json:"data_ip,omitempty"`
	// CPUs is the rank's CPU affinity, as a list like "0-1".
	CPUs string `json:"cpus,omitempty"`
	// NUMA lists the machine's NUMA nodes and their CPUs.
	NUMA []NUMANode `json:"numa,omitempty"`
}

// HostID identifies a shared-memory domain.
type HostID struct {
	BootID string `json:"boot_id"` // the running kernel
	NetNS  string `json:"net_ns"`  // e.g. "net:[4026531833]"
	IPCNS  string `json:"ipc_ns"`
	ShmDev string `json:"shm_dev"` // device number of the /dev/shm mount
}

func (h HostID) String() string {
	return fmt.Sprintf("boot %.8s %s %s shm %s", h.BootID, h.NetNS, h.IPCNS, h.ShmDev)
}

// NUMANode is one NUMA node of the machine.
type NUMANode struct {
	ID   int    `json:"id"`
	CPUs string `json:"cpus"`
}

// Gather collects the facts of the calling process. Facts that cannot be
// read are left empty, except the host identity, without which shared
// memory cannot be decided.
func Gather(rank int) (Facts, error) {
	f := Facts{Rank: rank}
	f.Hostname, _ = os.Hostname()
	var err error
	if f.Host, err = hostID(); err != nil {
		return Facts{}, err
	}
	f.NICs, _ = listNICs()
	f.CPUs = affinity()
	f.NUMA = numaNodes()
	return f, nil
}

func hostID() (HostID, error) {
	var h HostID
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return h, fmt.Errorf("read the boot id: %w", err)
	}
	h.BootID = strings.TrimSpace(string(boot))
	if h.NetNS, err = os.Readlink("/proc/self/ns/net"); err != nil {
		return h, fmt.Errorf("read the network namespace: %w", err)
	}
	if h.IPCNS, err = os.Readlink("/proc/self/ns/ipc"); err != nil {
		return h, fmt.Errorf("read the IPC namespace: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat("/dev/shm", &st); err == nil {
		h.ShmDev = fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	}
	return h, nil
}

package ranktable

import (
	"fmt"
	"strconv"
	"time"
)

// The only status and version this package reads and writes. HCCL writes
// "completed" once a table is final; version 1.2 (super pods) has another
// shape and is rejected.
const (
	StatusCompleted = "completed"
	Version         = "1.0"
)

// Table is a rank table as it appears on the wire: every field is the JSON
// string. The Go-typed view (Size, Locate, FirstRank, Server.Size, Device.CPUs)
// is derived from positions in ServerList, which on a valid table agree with
// the rank_id strings.
type Table struct {
	Status      string   `json:"status"`
	Version     string   `json:"version"`
	ServerCount string   `json:"server_count"`
	ServerList  []Server `json:"server_list"`

	// Ours, optional.
	JobID       string `json:"job_id,omitempty"`
	ControlAddr string `json:"control_addr,omitempty"` // host:port of the control plane
	// HandoffNS is how long a waiter took to hand a shared core to
	// another process, in nanoseconds, as the launcher measured it on its
	// host (internal/handoff): a fact every rank reads alike, so that
	// the ranks' cost models agree. Empty when not measured.
	HandoffNS string `json:"handoff_ns,omitempty"`
}

// Server is one host of the job: HCCL's server, hcclrun's node.
type Server struct {
	ServerID string   `json:"server_id"`
	HostAddr string   `json:"host_addr,omitempty"` // ours: IP address the host is reached on
	Devices  []Device `json:"device"`
}

// Device is one rank. CPU jobs have no devices; the name is HCCL's.
type Device struct {
	DeviceID string `json:"device_id"`
	DeviceIP string `json:"device_ip,omitempty"`
	RankID   string `json:"rank_id"`

	// Ours, optional.
	LocalRank string `json:"local_rank,omitempty"`
	CPUList   string `json:"cpu_list,omitempty"` // Linux cpulist, e.g. "0-1,4"
}

// Location says where a rank lives: its server's index in ServerList (the
// node rank, HCCL_NODE_RANK), its index among that server's devices (the local
// rank) and the number of ranks on that server (the local world size).
type Location struct {
	Node      int
	Local     int
	LocalSize int
}

// Handoff returns handoff_ns as a duration, 0 when it is absent or does
// not parse (Validate reports that).
func (t *Table) Handoff() time.Duration {
	ns, why := parseDecimal(t.HandoffNS) // "" is a why too
	if why != "" {
		return 0
	}
	return time.Duration(ns)
}

// Size returns the number of ranks: the devices of all servers.
func (t *Table) Size() int {
	n := 0
	for i := range t.ServerList {
		n += len(t.ServerList[i].Devices)
	}
	return n
}

// Servers returns the servers in table order. The slice is the table's own;
// callers must not modify it.
func (t *Table) Servers() []Server { return t.ServerList }

// Locate returns where rank lives. It walks the servers, so it costs
// O(servers); callers that look up every rank should keep the result.
func (t *Table) Locate(rank int) (Location, error) {
	if rank < 0 {
		return Location{}, fmt.Errorf("ranktable: rank %d is negative", rank)
	}
	first := 0
	for i := range t.ServerList {
		n := len(t.ServerList[i].Devices)
		if rank < first+n {
			return Location{Node: i, Local: rank - first, LocalSize: n}, nil
		}
		first += n
	}
	return Location{}, fmt.Errorf("ranktable: rank %d out of range (table has %d ranks)", rank, first)
}

// FirstRank returns the rank of the first device of server node; the server's
// ranks are FirstRank(node) .. FirstRank(node)+Server.Size()-1. It returns -1
// when node is out of range.
func (t *Table) FirstRank(node int) int {
	if node < 0 || node >= len(t.ServerList) {
		return -1
	}
	first := 0
	for i := 0; i < node; i++ {
		first += len(t.ServerList[i].Devices)
	}
	return first
}

// Device returns the server and device entries of rank. The pointers point
// into the table.
func (t *Table) Device(rank int) (*Server, *Device, error) {
	loc, err := t.Locate(rank)
	if err != nil {
		return nil, nil, err
	}
	s := &t.ServerList[loc.Node]
	return s, &s.Devices[loc.Local], nil
}

// Size returns the number of ranks on the server (the local world size).
func (s *Server) Size() int { return len(s.Devices) }

// CPUs returns the CPUs the rank is bound to, parsed from cpu_list, or nil
// when the table does not say.
func (d *Device) CPUs() ([]int, error) {
	if d.CPUList == "" {
		return nil, nil
	}
	return ParseCPUList(d.CPUList)
}

// parseDecimal accepts the canonical decimal form of a non-negative int: the
// form HCCL and we write. Leading zeros are refused because "01" and "1"
// would otherwise be two spellings of one rank.
func parseDecimal(s string) (int, string) {
	if s == "" {
		return 0, "is empty"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, "is not a decimal number"
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, "has a leading zero"
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, "is too large"
	}
	return n, ""
}

package ranktable

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Validate checks the table against the contract and returns the first
// violation as a *FieldError naming the field's path and value:
//
//   - status is "completed" and version is "1.0";
//   - server_count is decimal and equals the number of servers; there is at
//     least one server, every server has at least one device, and there
//     are at most MaxRanks devices in all;
//   - server_id is non-empty and unique; host_addr, when present, is an IP
//     address;
//   - device_id is decimal and unique within its server; device_ip, when
//     present, is an IP address;
//   - rank_id is decimal, unique and below the number of ranks, and the
//     ranks are numbered in table order: contiguous within a server (HCCL's
//     rule) and increasing across servers (ours, so that the node rank and
//     first rank of a server follow from its position);
//   - local_rank, when present, is the device's index within its server;
//   - cpu_list, when present, parses (see ParseCPUList);
//   - control_addr, when present, is host:port with a numeric port;
//   - handoff_ns, when present, is decimal.
//
// Checking stops at the first violation because later ones are usually its
// consequences.
func (t *Table) Validate() error {
	if t.Status != StatusCompleted {
		return fieldErr("status", t.Status, fmt.Sprintf("is not %q", StatusCompleted))
	}
	if t.Version != Version {
		return fieldErr("version", t.Version, fmt.Sprintf("is not supported (want %q)", Version))
	}
	n, why := parseDecimal(t.ServerCount)
	if why != "" {
		return fieldErr("server_count", t.ServerCount, why)
	}
	if n != len(t.ServerList) {
		return fieldErr("server_count", t.ServerCount,
			fmt.Sprintf("does not match server_list, which has %d servers", len(t.ServerList)))
	}
	if len(t.ServerList) == 0 {
		return &FieldError{Path: "server_list", Msg: "is empty"}
	}
	if size := t.Size(); size > MaxRanks {
		return &FieldError{Path: "server_list", Msg: fmt.Sprintf("holds %d ranks, more than the %d a job may have", size, MaxRanks)}
	}
	if t.ControlAddr != "" {
		if why := checkHostPort(t.ControlAddr); why != "" {
			return fieldErr("control_addr", t.ControlAddr, why)
		}
	}
	if t.HandoffNS != "" {
		if _, why := parseDecimal(t.HandoffNS); why != "" {
			return fieldErr("handoff_ns", t.HandoffNS, why)
		}
	}
	size := t.Size()
	serverIDs := make(map[string]int, len(t.ServerList))
	rankAt := make(map[int]string, size) // rank -> path of the rank_id that holds it
	next := 0                            // the rank the next device must have
	for i := range t.ServerList {
		s := &t.ServerList[i]
		sp := serverPath(i)
		if s.ServerID == "" {
			return &FieldError{Path: sp + ".server_id", Msg: "is missing or empty"}
		}
		if prev, dup := serverIDs[s.ServerID]; dup {
			return fieldErr(sp+".server_id", s.ServerID, "duplicates "+serverPath(prev)+".server_id")
		}
		serverIDs[s.ServerID] = i
		if s.HostAddr != "" {
			if _, err := netip.ParseAddr(s.HostAddr); err != nil {
				return fieldErr(sp+".host_addr", s.HostAddr, "is not an IP address")
			}
		}
		if len(s.Devices) == 0 {
			return &FieldError{Path: sp + ".device", Msg: "is empty: a server must have at least one rank"}
		}
		deviceIDs := make(map[int]int, len(s.Devices))
		for j := range s.Devices {
			if err := checkDevice(&s.Devices[j], i, j, deviceIDs, rankAt, next, size); err != nil {
				return err
			}
			next++
		}
	}
	return nil
}

// checkDevice checks server i's device j, which must hold rank want.
func checkDevice(d *Device, i, j int, deviceIDs map[int]int, rankAt map[int]string, want, size int) error {
	dp := devicePath(i, j)
	id, why := parseDecimal(d.DeviceID)
	if why != "" {
		return fieldErr(dp+".device_id", d.DeviceID, why)
	}
	if prev, dup := deviceIDs[id]; dup {
		return fieldErr(dp+".device_id", d.DeviceID, fmt.Sprintf("duplicates %s.device_id", devicePath(i, prev)))
	}
	deviceIDs[id] = j
	if d.DeviceIP != "" {
		if _, err := netip.ParseAddr(d.DeviceIP); err != nil {
			return fieldErr(dp+".device_ip", d.DeviceIP, "is not an IP address")
		}
	}
	rp := dp + ".rank_id"
	rank, why := parseDecimal(d.RankID)
	if why != "" {
		return fieldErr(rp, d.RankID, why)
	}
	if prev, dup := rankAt[rank]; dup {
		return fieldErr(rp, d.RankID, "duplicates "+prev)
	}
	rankAt[rank] = rp
	if rank >= size {
		return fieldErr(rp, d.RankID, fmt.Sprintf("is out of range (the table has %d ranks)", size))
	}
	if rank != want {
		if j == 0 {
			return fieldErr(rp, d.RankID, fmt.Sprintf("breaks the order across servers (want %q)", strconv.Itoa(want)))
		}
		return fieldErr(rp, d.RankID, fmt.Sprintf("breaks contiguity (want %q)", strconv.Itoa(want)))
	}
	if d.LocalRank != "" {
		lr, why := parseDecimal(d.LocalRank)
		if why != "" {
			return fieldErr(dp+".local_rank", d.LocalRank, why)
		}
		if lr != j {
			return fieldErr(dp+".local_rank", d.LocalRank,
				fmt.Sprintf("is not the device's index in its server (want %q)", strconv.Itoa(j)))
		}
	}
	if d.CPUList != "" {
		if _, err := ParseCPUList(d.CPUList); err != nil {
			return &FieldError{Path: dp + ".cpu_list", Value: d.CPUList, Msg: fmt.Sprintf("%q: %v", d.CPUList, err)}
		}
	}
	return nil
}

// checkHostPort accepts "host:port" and "[v6]:port" with a port in 1..65535.
// The host may be a name: the launcher may advertise one.
func checkHostPort(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "is not host:port"
	}
	if host == "" {
		return "has no host"
	}
	p, why := parseDecimal(port)
	if why != "" || p < 1 || p > 65535 {
		return "has no valid port (want 1..65535)"
	}
	return ""
}

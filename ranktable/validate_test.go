package ranktable

import (
	"errors"
	"testing"
	"time"
)

// validTable is 2 servers of 4 ranks with every optional field set.
func validTable(t *testing.T) *Table {
	t.Helper()
	tab, err := Generate(Spec{
		JobID:       "j",
		ControlAddr: "10.0.0.1:1234",
		Handoff:     3100 * time.Nanosecond,
		Servers: []ServerSpec{
			{ID: "h0", HostAddr: "10.0.0.1", Ranks: 4, CPUs: []int{0, 1, 2, 3}},
			{ID: "h1", HostAddr: "10.0.0.2", Ranks: 4, CPUs: []int{0, 1, 2, 3}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Table)
		path   string // "" = valid
		msg    string // the whole message
	}{
		{"valid", func(*Table) {}, "", ""},
		{"valid without our fields", func(t *Table) {
			t.JobID, t.ControlAddr, t.HandoffNS = "", "", ""
			for i := range t.ServerList {
				t.ServerList[i].HostAddr = ""
				for j := range t.ServerList[i].Devices {
					d := &t.ServerList[i].Devices[j]
					d.DeviceIP, d.LocalRank, d.CPUList = "", "", ""
				}
			}
		}, "", ""},
		{"valid ipv6 control", func(t *Table) { t.ControlAddr = "[fd00::1]:80" }, "", ""},
		{"valid named control", func(t *Table) { t.ControlAddr = "head-node:29500" }, "", ""},

		{"status", func(t *Table) { t.Status = "initializing" }, "status",
			`status: "initializing" is not "completed"`},
		{"version", func(t *Table) { t.Version = "1.2" }, "version",
			`version: "1.2" is not supported (want "1.0")`},
		{"server count word", func(t *Table) { t.ServerCount = "two" }, "server_count",
			`server_count: "two" is not a decimal number`},
		{"server count mismatch", func(t *Table) { t.ServerCount = "3" }, "server_count",
			`server_count: "3" does not match server_list, which has 2 servers`},
		{"no servers", func(t *Table) { t.ServerCount, t.ServerList = "0", nil }, "server_list",
			`server_list: is empty`},
		{"control addr no port", func(t *Table) { t.ControlAddr = "10.0.0.1" }, "control_addr",
			`control_addr: "10.0.0.1" is not host:port`},
		{"control addr bad port", func(t *Table) { t.ControlAddr = "10.0.0.1:0" }, "control_addr",
			`control_addr: "10.0.0.1:0" has no valid port (want 1..65535)`},
		{"handoff not decimal", func(t *Table) { t.HandoffNS = "3.1us" }, "handoff_ns",
			`handoff_ns: "3.1us" is not a decimal number`},
		{"server id empty", func(t *Table) { t.ServerList[1].ServerID = "" }, "server_list[1].server_id",
			`server_list[1].server_id: is missing or empty`},
		{"server id duplicate", func(t *Table) { t.ServerList[1].ServerID = "h0" }, "server_list[1].server_id",
			`server_list[1].server_id: "h0" duplicates server_list[0].server_id`},
		{"host addr", func(t *Table) { t.ServerList[0].HostAddr = "node0" }, "server_list[0].host_addr",
			`server_list[0].host_addr: "node0" is not an IP address`},
		{"no devices", func(t *Table) { t.ServerList[1].Devices = nil }, "server_list[1].device",
			`server_list[1].device: is empty: a server must have at least one rank`},
		{"device id word", func(t *Table) { t.ServerList[0].Devices[1].DeviceID = "npu1" }, "server_list[0].device[1].device_id",
			`server_list[0].device[1].device_id: "npu1" is not a decimal number`},
		{"device id duplicate", func(t *Table) { t.ServerList[1].Devices[3].DeviceID = "1" }, "server_list[1].device[3].device_id",
			`server_list[1].device[3].device_id: "1" duplicates server_list[1].device[1].device_id`},
		{"device ip", func(t *Table) { t.ServerList[1].Devices[2].DeviceIP = "192.168.1.300" }, "server_list[1].device[2].device_ip",
			`server_list[1].device[2].device_ip: "192.168.1.300" is not an IP address`},
		{"rank word", func(t *Table) { t.ServerList[1].Devices[0].RankID = "x" }, "server_list[1].device[0].rank_id",
			`server_list[1].device[0].rank_id: "x" is not a decimal number`},
		{"rank negative", func(t *Table) { t.ServerList[0].Devices[0].RankID = "-1" }, "server_list[0].device[0].rank_id",
			`server_list[0].device[0].rank_id: "-1" is not a decimal number`},
		{"rank empty", func(t *Table) { t.ServerList[0].Devices[3].RankID = "" }, "server_list[0].device[3].rank_id",
			`server_list[0].device[3].rank_id: "" is empty`},
		{"rank leading zero", func(t *Table) { t.ServerList[0].Devices[1].RankID = "01" }, "server_list[0].device[1].rank_id",
			`server_list[0].device[1].rank_id: "01" has a leading zero`},
		{"rank huge", func(t *Table) { t.ServerList[0].Devices[1].RankID = "99999999999999999999" }, "server_list[0].device[1].rank_id",
			`server_list[0].device[1].rank_id: "99999999999999999999" is too large`},
		{"rank duplicate", func(t *Table) { t.ServerList[1].Devices[0].RankID = "2" }, "server_list[1].device[0].rank_id",
			`server_list[1].device[0].rank_id: "2" duplicates server_list[0].device[2].rank_id`},
		{"rank out of range", func(t *Table) { t.ServerList[1].Devices[3].RankID = "8" }, "server_list[1].device[3].rank_id",
			`server_list[1].device[3].rank_id: "8" is out of range (the table has 8 ranks)`},
		{"rank gap in server", func(t *Table) {
			t.ServerList[0].Devices[2].RankID, t.ServerList[1].Devices[1].RankID = "5", "2"
		}, "server_list[0].device[2].rank_id",
			`server_list[0].device[2].rank_id: "5" breaks contiguity (want "2")`},
		{"servers swapped", func(t *Table) {
			// HCCL would accept this (each server is contiguous); we do not.
			for j := range 4 {
				a, b := &t.ServerList[0].Devices[j], &t.ServerList[1].Devices[j]
				a.RankID, b.RankID = b.RankID, a.RankID
			}
		}, "server_list[0].device[0].rank_id",
			`server_list[0].device[0].rank_id: "4" breaks the order across servers (want "0")`},
		{"local rank wrong", func(t *Table) { t.ServerList[1].Devices[2].LocalRank = "6" }, "server_list[1].device[2].local_rank",
			`server_list[1].device[2].local_rank: "6" is not the device's index in its server (want "2")`},
		{"local rank word", func(t *Table) { t.ServerList[1].Devices[2].LocalRank = "two" }, "server_list[1].device[2].local_rank",
			`server_list[1].device[2].local_rank: "two" is not a decimal number`},
		{"cpu list", func(t *Table) { t.ServerList[0].Devices[0].CPUList = "3-1" }, "server_list[0].device[0].cpu_list",
			`server_list[0].device[0].cpu_list: "3-1": cpu range "3-1" is decreasing`},
		{"cpu list word", func(t *Table) { t.ServerList[0].Devices[0].CPUList = "0,a" }, "server_list[0].device[0].cpu_list",
			`server_list[0].device[0].cpu_list: "0,a": cpu "a" in "a" is not a decimal number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := validTable(t)
			tt.mutate(tab)
			err := tab.Validate()
			if tt.path == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted the table")
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %q (%T) is not a *FieldError", err, err)
			}
			if fe.Path != tt.path {
				t.Errorf("path = %q, want %q", fe.Path, tt.path)
			}
			if err.Error() != tt.msg {
				t.Errorf("message:\n got %s\nwant %s", err, tt.msg)
			}
		})
	}
}

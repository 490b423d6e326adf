package ranktable

import (
	"strings"
	"testing"
)

func TestGenerateNumbering(t *testing.T) {
	tab, err := Generate(sampleSpec())
	if err != nil {
		t.Fatal(err)
	}
	if tab.ServerCount != "3" || tab.Size() != 6 || tab.JobID != "job-7" || tab.ControlAddr != "10.0.0.1:29500" {
		t.Fatalf("header: %+v", tab)
	}
	// rank -> (server_id, device_id/local_rank, device_ip)
	want := []struct{ server, local, ip string }{
		{"h1", "0", "10.0.0.1"}, {"h1", "1", "10.0.0.1"},
		{"fd00::2", "0", "fd00::2"}, {"fd00::2", "1", "fd00::2"}, {"fd00::2", "2", "fd00::2"},
		{"h3", "0", ""},
	}
	for r, w := range want {
		s, d, err := tab.Device(r)
		if err != nil {
			t.Fatal(err)
		}
		if s.ServerID != w.server || d.DeviceID != w.local || d.LocalRank != w.local || d.DeviceIP != w.ip || d.RankID != itoa(r) {
			t.Errorf("rank %d: server %q device %+v, want %+v", r, s.ServerID, *d, w)
		}
	}
}

// TestGenerateHandoff checks that the launcher's measured hand-off is
// written as nanoseconds and read as a duration (TestRoundTrip carries it
// through the wire form), and left out when not measured.
func TestGenerateHandoff(t *testing.T) {
	spec := sampleSpec() // 3100 ns
	tab, err := Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	if tab.HandoffNS != "3100" || tab.Handoff() != spec.Handoff {
		t.Errorf("handoff_ns %q, Handoff() %v; want \"3100\" and %v", tab.HandoffNS, tab.Handoff(), spec.Handoff)
	}
	spec.Handoff = 0
	if tab, err = Generate(spec); err != nil {
		t.Fatal(err)
	}
	if tab.HandoffNS != "" || tab.Handoff() != 0 {
		t.Errorf("no hand-off: handoff_ns %q, Handoff() %v; want none", tab.HandoffNS, tab.Handoff())
	}
}

func itoa(i int) string { return FormatCPUList([]int{i}) } // a one-element cpu list is the decimal

func TestGenerateCPUShares(t *testing.T) {
	tests := []struct {
		name  string
		cpus  []int
		ranks int
		want  []string
	}{
		{"none", nil, 2, []string{"", ""}},
		{"even", []int{0, 1, 2, 3}, 2, []string{"0-1", "2-3"}},
		{"uneven", []int{0, 1, 2, 3, 4}, 2, []string{"0-2", "3-4"}},
		{"given order", []int{4, 5, 0, 1}, 2, []string{"4-5", "0-1"}},
		{"one each", []int{8, 9, 10}, 3, []string{"8", "9", "10"}},
		{"oversubscribed", []int{0, 1}, 5, []string{"0", "1", "0", "1", "0"}},
		{"sparse", []int{0, 2, 4, 6}, 1, []string{"0,2,4,6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := Generate(Spec{Servers: []ServerSpec{{ID: "h", Ranks: tt.ranks, CPUs: tt.cpus}}})
			if err != nil {
				t.Fatal(err)
			}
			for j, d := range tab.ServerList[0].Devices {
				if d.CPUList != tt.want[j] {
					t.Errorf("local rank %d: cpu_list %q, want %q", j, d.CPUList, tt.want[j])
				}
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"no servers", Spec{}, "no servers"},
		{"zero ranks", Spec{Servers: []ServerSpec{{ID: "a", Ranks: 1}, {ID: "b"}}}, `server 1 ("b") has 0 ranks`},
		{"bad addr", Spec{Servers: []ServerSpec{{HostAddr: "node1", Ranks: 1}}}, `host address "node1" is not an IP`},
		{"no id", Spec{Servers: []ServerSpec{{Ranks: 1}}}, "server_list[0].server_id: is missing"},
		{"dup id", Spec{Servers: []ServerSpec{{ID: "a", Ranks: 1}, {ID: "a", Ranks: 1}}}, "server_list[1].server_id"},
		{"bad cpu", Spec{Servers: []ServerSpec{{ID: "a", Ranks: 1, CPUs: []int{-1}}}}, "cpu -1 out of range"},
		{"bad control", Spec{ControlAddr: "x", Servers: []ServerSpec{{ID: "a", Ranks: 1}}}, "control_addr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Generate(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Generate error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

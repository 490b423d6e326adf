package topo

import (
	"strings"
	"testing"
)

func TestBuildGroupsByHostIdentity(t *testing.T) {
	hostA := HostID{BootID: "b1", NetNS: "net:[1]", IPCNS: "ipc:[1]", ShmDev: "0:22"}
	hostB := hostA
	hostB.NetNS = "net:[2]" // same kernel, other network namespace: another server
	facts := []Facts{
		{Rank: 0, Hostname: "h1", Host: hostA, DataIP: "10.0.0.1", NICs: []NIC{{Name: "eth0", Addrs: []string{"10.0.0.1/24"}}}},
		{Rank: 1, Hostname: "h1", Host: hostA, DataIP: "10.0.0.1"},
		{Rank: 2, Hostname: "h1", Host: hostB, DataIP: "10.0.0.2"},
	}
	topo, err := Build(facts, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.Servers) != 2 || len(topo.Servers[0]) != 2 || topo.Servers[1][0] != 2 {
		t.Fatalf("servers %v", topo.Servers)
	}
	cases := []struct {
		a, b int
		want Class
	}{{0, 0, Self}, {0, 1, Shm}, {1, 0, Shm}, {0, 2, TCP}, {2, 1, TCP}}
	for _, c := range cases {
		if got := topo.Class(c.a, c.b); got != c.want {
			t.Errorf("Class(%d,%d) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if topo.LocalRank(1) != 1 || topo.LocalRank(2) != 0 {
		t.Errorf("local ranks %d %d", topo.LocalRank(1), topo.LocalRank(2))
	}
	var out strings.Builder
	if err := topo.Print(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 ranks on 2 servers", "shm", "tcp", "eth0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	noShm, _ := Build(facts, true)
	if noShm.Class(0, 1) != TCP {
		t.Errorf("shm disabled: Class(0,1) = %v", noShm.Class(0, 1))
	}
}

func TestGatherReadsThisProcess(t *testing.T) {
	f, err := Gather(3)
	if err != nil {
		t.Fatal(err)
	}
	if f.Rank != 3 || f.Host.BootID == "" || !strings.HasPrefix(f.Host.NetNS, "net:[") || f.CPUs == "" {
		t.Fatalf("facts %+v", f)
	}
	lo := false
	for _, n := range f.NICs {
		lo = lo || n.Name == "lo"
	}
	if !lo {
		t.Errorf("no loopback among %+v", f.NICs)
	}
	dev, src, err := RouteTo("127.0.0.1")
	if err != nil || dev != "lo" {
		t.Errorf("RouteTo(127.0.0.1) = %q %q %v", dev, src, err)
	}
}

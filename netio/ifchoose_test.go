package netio

import (
	"errors"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParseIfSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want IfSpec
		err  bool
	}{
		{"", IfSpec{}, false},
		{"  ", IfSpec{}, false},
		{"eth", IfSpec{Names: []string{"eth"}}, false},
		{"eth,ib", IfSpec{Names: []string{"eth", "ib"}}, false},
		{"^docker,lo", IfSpec{Exclude: true, Names: []string{"docker", "lo"}}, false},
		{"=eth0", IfSpec{Exact: true, Names: []string{"eth0"}}, false},
		{"=eth0,eth1", IfSpec{Exact: true, Names: []string{"eth0", "eth1"}}, false},
		{"^=eth0", IfSpec{Exclude: true, Exact: true, Names: []string{"eth0"}}, false},
		{" eth0 , ib0 ", IfSpec{Names: []string{"eth0", "ib0"}}, false},
		{"^", IfSpec{}, true},
		{"=", IfSpec{}, true},
		{"^=", IfSpec{}, true},
		{"eth,", IfSpec{}, true},
		{",eth", IfSpec{}, true},
		{"=^eth", IfSpec{}, true},
		{"eth0 ib0", IfSpec{}, true},
		{"eth/0", IfSpec{}, true},
	} {
		got, err := ParseIfSpec(tc.in)
		if tc.err {
			if !errors.Is(err, ErrBadIfSpec) {
				t.Errorf("ParseIfSpec(%q) = %+v, %v; want ErrBadIfSpec", tc.in, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseIfSpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if again, err := ParseIfSpec(got.String()); err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("ParseIfSpec(%q.String() = %q) = %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func pfx(s ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, x := range s {
		out = append(out, netip.MustParsePrefix(x))
	}
	return out
}

const up = net.FlagUp | net.FlagRunning

var (
	ifLo      = Interface{Name: "lo", Index: 1, Flags: up | net.FlagLoopback, Kind: "device", Addrs: pfx("127.0.0.1/8", "::1/128")}
	ifEth0    = Interface{Name: "eth0", Index: 2, Flags: up, Kind: "device", Addrs: pfx("192.0.2.2/24", "fe80::1/64")}
	ifVethNS  = Interface{Name: "eth0", Index: 2, Flags: up, Kind: "veth", Addrs: pfx("10.77.0.1/24", "fe80::2/64")}
	ifDocker  = Interface{Name: "docker0", Index: 3, Flags: up, Kind: "bridge", Addrs: pfx("172.17.0.1/16")}
	ifBridge  = Interface{Name: "hcbr0", Index: 4, Flags: up, Kind: "bridge", Addrs: pfx("10.77.0.254/24")}
	ifVethHst = Interface{Name: "hcv-h1", Index: 5, Flags: up, Kind: "veth"}
	ifBrDash  = Interface{Name: "br-3f2a", Index: 6, Flags: up, Kind: "", Addrs: pfx("172.18.0.1/16")}
	ifIb0     = Interface{Name: "ib0", Index: 7, Flags: up, Kind: "ipoib", Addrs: pfx("10.1.0.5/16")}
	ifDown    = Interface{Name: "eth1", Index: 8, Flags: 0, Kind: "device", Addrs: pfx("10.2.0.5/16")}
	ifV6      = Interface{Name: "eth2", Index: 9, Flags: up, Kind: "device", Addrs: pfx("fe80::9/64", "2001:db8::9/64")}
	ifLinkLoc = Interface{Name: "eth3", Index: 10, Flags: up, Kind: "device", Addrs: pfx("fe80::10/64")}
)

func TestChooseInterface(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ifs    []Interface
		spec   string
		single bool
		want   string // interface name, "" for an error
		addr   string
		reason string // substring of the reason, or of the error
	}{
		{"root ns of a test host", []Interface{ifLo, ifEth0, ifBridge, ifVethHst}, "", false, "eth0", "192.0.2.2", "eth0: first up non-loopback interface with an IPv4 address"},
		{"inside a netns the veth eth0 is the NIC", []Interface{ifLo, ifVethNS}, "", false, "eth0", "10.77.0.1", "first up non-loopback"},
		{"docker and br- skipped", []Interface{ifLo, ifDocker, ifBrDash, ifEth0}, "", false, "eth0", "192.0.2.2", "first up non-loopback"},
		{"down skipped", []Interface{ifLo, ifDown, ifIb0}, "", false, "ib0", "10.1.0.5", "ib0: first up"},
		{"IPv4 beats earlier IPv6-only", []Interface{ifLo, ifV6, ifEth0}, "", false, "eth0", "192.0.2.2", "IPv4"},
		{"IPv6 only", []Interface{ifLo, ifLinkLoc, ifV6}, "", false, "eth2", "2001:db8::9", "only an IPv6"},
		{"single host prefers loopback", []Interface{ifEth0, ifLo}, "", true, "lo", "127.0.0.1", "lo: loopback, all ranks on one host"},
		{"single host without loopback", []Interface{ifEth0}, "", true, "eth0", "192.0.2.2", "all ranks on one host but no loopback"},
		{"only loopback, several hosts", []Interface{ifLo, ifDocker}, "", false, "", "", "lo (loopback, ranks on several hosts), docker0 (a bridge)"},
		{"nothing", nil, "", false, "", "", "no interfaces"},
		{"prefix", []Interface{ifLo, ifEth0, ifIb0}, "ib", false, "ib0", "10.1.0.5", "ib0: matched HCCL_SOCKET_IFNAME=ib"},
		{"prefix list order is interface order", []Interface{ifLo, ifEth0, ifIb0}, "ib,eth", false, "eth0", "192.0.2.2", "matched HCCL_SOCKET_IFNAME=ib,eth"},
		{"include overrides the bridge rule", []Interface{ifLo, ifEth0, ifBridge}, "hcbr", false, "hcbr0", "10.77.0.254", "matched"},
		{"exact", []Interface{ifLo, ifEth0, ifIb0}, "=ib0", false, "ib0", "10.1.0.5", "matched HCCL_SOCKET_IFNAME==ib0"},
		{"exact is not a prefix", []Interface{ifLo, ifEth0}, "=eth", false, "", "", "matches HCCL_SOCKET_IFNAME==eth"},
		{"include matches only a down one", []Interface{ifLo, ifDown}, "eth1", false, "", "", "eth1 (down)"},
		{"include lo", []Interface{ifEth0, ifLo}, "lo", false, "lo", "127.0.0.1", "matched"},
		{"exclude", []Interface{ifLo, ifEth0, ifIb0}, "^eth", false, "ib0", "10.1.0.5", "not excluded by HCCL_SOCKET_IFNAME=^eth"},
		{"exclude replaces the default list", []Interface{ifLo, ifDocker, ifEth0}, "^eth", false, "docker0", "172.17.0.1", "not excluded"},
		{"exclude leaves loopback as last resort", []Interface{ifLo, ifEth0}, "^eth", false, "lo", "127.0.0.1", "not excluded"},
		{"exclude exact", []Interface{ifLo, ifEth0, ifIb0}, "^=eth0", false, "ib0", "10.1.0.5", "not excluded"},
		{"exclude exact keeps longer names", []Interface{ifLo, ifEth0, ifV6}, "^=eth", false, "eth0", "192.0.2.2", "not excluded"},
		{"exclude everything", []Interface{ifLo, ifEth0}, "^eth,lo", false, "", "", "HCCL_SOCKET_IFNAME=^eth,lo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseIfSpec(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ChooseInterface(tc.ifs, spec, ChooseOptions{SingleHost: tc.single})
			if tc.want == "" {
				if !errors.Is(err, ErrNoInterface) || !strings.Contains(err.Error(), tc.reason) {
					t.Fatalf("got %+v, %v; want ErrNoInterface mentioning %q", got, err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Interface.Name != tc.want || got.Addr.String() != tc.addr || !strings.Contains(got.Reason, tc.reason) {
				t.Fatalf("got %s %s %q; want %s %s reason containing %q", got.Interface.Name, got.Addr, got.Reason, tc.want, tc.addr, tc.reason)
			}
		})
	}
}

// TestInterfacesReal lists this machine's interfaces and checks that the
// default choice is consistent with them.
func TestInterfacesReal(t *testing.T) {
	ifs, err := Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var lo *Interface
	for i := range ifs {
		if ifs[i].Flags&net.FlagLoopback != 0 {
			lo = &ifs[i]
		}
	}
	if lo == nil || lo.Kind != "device" || !lo.Addrs[0].Addr().IsLoopback() {
		t.Fatalf("no loopback with netlink kind in %+v", ifs)
	}
	c, err := ChooseInterface(ifs, IfSpec{}, ChooseOptions{SingleHost: true})
	if err != nil || c.Interface.Name != lo.Name {
		t.Fatalf("single host choice %+v, %v; want %s", c, err, lo.Name)
	}
	c, err = ChooseInterface(ifs, IfSpec{}, ChooseOptions{})
	if err == nil {
		t.Logf("default choice: %s (%s, kind %q)", c.Reason, c.Addr, c.Interface.Kind)
		if c.Interface.Flags&net.FlagLoopback != 0 || c.Interface.Kind == "bridge" {
			t.Fatalf("default chose %+v", c.Interface)
		}
	} else {
		t.Logf("no default choice on this machine: %v", err)
	}
}

package topo

import (
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
)

// NIC is one network interface as netlink reports it.
type NIC struct {
	Name  string   `json:"name"`
	Type  string   `json:"type"` // netlink's link type: device, veth, bridge, ...
	Up    bool     `json:"up"`
	MTU   int      `json:"mtu"`
	Addrs []string `json:"addrs,omitempty"` // CIDR notation
	// SpeedMbps is the link speed from sysfs, 0 when unknown (virtio
	// reports -1, loopback none).
	SpeedMbps int `json:"speed_mbps,omitempty"`
}

// Has tells whether ip is one of the interface's addresses.
func (n NIC) Has(ip string) bool {
	for _, a := range n.Addrs {
		if p, _, err := net.ParseCIDR(a); err == nil && p.String() == ip {
			return true
		}
	}
	return false
}

func listNICs() ([]NIC, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, err
	}
	nics := make([]NIC, 0, len(links))
	for _, l := range links {
		a := l.Attrs()
		n := NIC{Name: a.Name, Type: l.Type(), Up: a.Flags&net.FlagUp != 0, MTU: a.MTU, SpeedMbps: linkSpeed(a.Name)}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err == nil {
			for _, ad := range addrs {
				n.Addrs = append(n.Addrs, ad.IPNet.String())
			}
		}
		nics = append(nics, n)
	}
	return nics, nil
}

// linkSpeed reads /sys/class/net/NAME/speed. sysfs shows the network
// namespace of the process that mounted it, which for a rank started
// inside its host is the right one.
func linkSpeed(name string) int {
	b, err := os.ReadFile("/sys/class/net/" + name + "/speed")
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// RouteTo returns the interface and source address the kernel uses to reach
// ip, from netlink's route lookup.
func RouteTo(ip string) (dev, src string, err error) {
	dst := net.ParseIP(ip)
	if dst == nil {
		return "", "", &net.AddrError{Err: "not an IP address", Addr: ip}
	}
	routes, err := netlink.RouteGet(dst)
	if err != nil {
		return "", "", err
	}
	for _, r := range routes {
		if r.LinkIndex == 0 {
			continue
		}
		l, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil {
			continue
		}
		return l.Attrs().Name, r.Src.String(), nil
	}
	return "", "", &net.AddrError{Err: "no route", Addr: ip}
}

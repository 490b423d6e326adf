package netio

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
)

// Interfaces lists the network interfaces of the calling thread's network
// namespace, in index order, with their link kind from netlink when it
// answers (without it, bridges are recognised by name only).
func Interfaces() ([]Interface, error) {
	nifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("netio: list interfaces: %w", err)
	}
	kinds := map[int]string{}
	if links, err := netlink.LinkList(); err == nil {
		for _, l := range links {
			kinds[l.Attrs().Index] = l.Type()
		}
	}
	out := make([]Interface, 0, len(nifs))
	for _, n := range nifs {
		ifc := Interface{Name: n.Name, Index: n.Index, Flags: n.Flags, Kind: kinds[n.Index]}
		addrs, err := n.Addrs()
		if err != nil {
			return nil, fmt.Errorf("netio: addresses of %s: %w", n.Name, err)
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ones, _ := ipn.Mask.Size()
			if ip.Is4In6() {
				ip = ip.Unmap()
			}
			ifc.Addrs = append(ifc.Addrs, netip.PrefixFrom(ip, ones))
		}
		out = append(out, ifc)
	}
	return out, nil
}

package netio

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Interface is what the chooser knows of a network interface. Interfaces
// fills it from the running system; tests write it by hand.
type Interface struct {
	Name  string
	Index int
	Flags net.Flags
	// Kind is the link type netlink reports: "device" for a physical or
	// virtio NIC, "veth", "bridge", "vxlan", "tuntap", ... Empty when
	// unknown.
	Kind  string
	Addrs []netip.Prefix
}

// ChooseOptions are the facts about the job the chooser cannot see.
type ChooseOptions struct {
	// SingleHost says all ranks run on this machine: loopback is then
	// the right choice, and it is preferred.
	SingleHost bool
}

// Choice is the chooser's answer.
type Choice struct {
	Interface Interface
	Addr      netip.Addr // the address to listen on and advertise
	Reason    string     // one line, for the INFO log: why this one
}

// virtualPrefixes name interfaces that exist for containers and virtual
// machines on this host and do not reach other hosts. veth is deliberately
// absent: inside a network namespace (our own multi-host tests, and most
// containers) the only NIC is a veth called eth0.
var virtualPrefixes = []string{"docker", "virbr", "br-", "cni", "flannel", "vxlan"}

// virtualKinds are link types skipped whatever their name: a bridge
// carries its ports' traffic, and its address is usually the host side of
// a private network.
var virtualKinds = []string{"bridge", "vxlan"}

// ErrNoInterface reports that no interface fits.
var ErrNoInterface = errors.New("netio: no usable network interface")

// ChooseInterface picks the interface to use for TCP among ifs, in order.
// It is pure: Interfaces supplies ifs from the system.
//
// An interface qualifies when it is up and has an IPv4 address or a global
// IPv6 one; IPv4 wins over IPv6 on the same interface, and an interface
// with IPv4 wins over an earlier one with only IPv6. Then:
//
//   - with an including spec (eth,ib or =eth0) only the named interfaces
//     are considered, whatever their kind;
//   - with an excluding spec (^docker) every qualifying interface the spec
//     does not name is considered, loopback last unless SingleHost;
//   - with no spec, loopback is skipped unless SingleHost (then preferred),
//     and so are container and VM plumbing (docker*, virbr*, br-*, cni*,
//     flannel*, vxlan*, bridges).
func ChooseInterface(ifs []Interface, spec IfSpec, opt ChooseOptions) (Choice, error) {
	type cand struct {
		ifc  Interface
		addr netip.Addr
		rank int // lower is better
	}
	var best *cand
	var skipped []string
	for _, ifc := range ifs {
		loop := ifc.Flags&net.FlagLoopback != 0
		if !spec.IsZero() && spec.matchName(ifc.Name) == spec.Exclude {
			skipped = append(skipped, ifc.Name+" (HCCL_SOCKET_IFNAME="+spec.String()+")")
			continue
		}
		if spec.IsZero() {
			if why := virtualReason(ifc); why != "" {
				skipped = append(skipped, ifc.Name+" ("+why+")")
				continue
			}
			if loop && !opt.SingleHost {
				skipped = append(skipped, ifc.Name+" (loopback, ranks on several hosts)")
				continue
			}
		}
		if ifc.Flags&net.FlagUp == 0 {
			skipped = append(skipped, ifc.Name+" (down)")
			continue
		}
		addr, v4 := pickAddr(ifc.Addrs)
		if !addr.IsValid() {
			skipped = append(skipped, ifc.Name+" (no IPv4 or global IPv6 address)")
			continue
		}
		rank := 0
		if !v4 {
			rank += 2
		}
		if loop != opt.SingleHost {
			rank += 4
		}
		if best == nil || rank < best.rank {
			best = &cand{ifc, addr, rank}
		}
	}
	if best == nil {
		what := "no interfaces"
		if len(skipped) > 0 {
			what = "skipped " + strings.Join(skipped, ", ")
		}
		if !spec.IsZero() {
			return Choice{}, fmt.Errorf("%w matches HCCL_SOCKET_IFNAME=%s: %s", ErrNoInterface, spec, what)
		}
		return Choice{}, fmt.Errorf("%w: %s", ErrNoInterface, what)
	}
	return Choice{Interface: best.ifc, Addr: best.addr, Reason: reason(best.ifc, best.addr, spec, opt)}, nil
}

func reason(ifc Interface, addr netip.Addr, spec IfSpec, opt ChooseOptions) string {
	fam := "an IPv4"
	if !addr.Is4() {
		fam = "only an IPv6"
	}
	loop := ifc.Flags&net.FlagLoopback != 0
	switch {
	case !spec.IsZero() && !spec.Exclude:
		return fmt.Sprintf("%s: matched HCCL_SOCKET_IFNAME=%s", ifc.Name, spec)
	case !spec.IsZero():
		return fmt.Sprintf("%s: first up interface with %s address not excluded by HCCL_SOCKET_IFNAME=%s", ifc.Name, fam, spec)
	case loop && opt.SingleHost:
		return fmt.Sprintf("%s: loopback, all ranks on one host", ifc.Name)
	case opt.SingleHost:
		return fmt.Sprintf("%s: all ranks on one host but no loopback, first up interface with %s address", ifc.Name, fam)
	}
	return fmt.Sprintf("%s: first up non-loopback interface with %s address", ifc.Name, fam)
}

// virtualReason says why ifc is container or VM plumbing, or "".
func virtualReason(ifc Interface) string {
	for _, k := range virtualKinds {
		if ifc.Kind == k {
			return "a " + k
		}
	}
	for _, p := range virtualPrefixes {
		if strings.HasPrefix(ifc.Name, p) {
			return "virtual, name starts with " + p
		}
	}
	return ""
}

// pickAddr returns the first IPv4 address, or else the first global
// unicast IPv6 one (a link-local address needs a zone and does not route).
func pickAddr(ps []netip.Prefix) (addr netip.Addr, v4 bool) {
	for _, p := range ps {
		if a := p.Addr().Unmap(); a.Is4() {
			return a, true
		}
	}
	for _, p := range ps {
		if a := p.Addr(); a.Is6() && (a.IsGlobalUnicast() || a.IsLoopback()) {
			return a, false
		}
	}
	return netip.Addr{}, false
}

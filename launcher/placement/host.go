package placement

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Host is a machine ranks may run on.
type Host struct {
	// Name is the host name or IP address as the user wrote it (after
	// hostlist expansion, without "user@"). The launcher resolves it and
	// reaches it over SSH unless it is this machine.
	Name string
	// User is the login from "user@host", "" for SSH's default.
	User string
	// Slots is how many ranks the host takes before it counts as
	// oversubscribed. A hostfile line or -H entry without a count gives 1
	// (MPICH's rule and Open MPI's before v4; Open MPI 4+ would count the
	// remote cores, which is unknown before the host is reached).
	Slots int
	// MaxSlots is a hard limit on the host's ranks, even with
	// --oversubscribe; 0 means none.
	MaxSlots int
}

// hostSet collects hosts in order of first appearance, merging repeats the
// way Open MPI does: slots add up, a later max_slots replaces an earlier
// one, and the merged slots may not exceed max_slots.
type hostSet struct {
	hosts []Host
	index map[string]int
}

// add merges h. It returns why the merge is impossible, or "".
func (s *hostSet) add(h Host) string {
	if s.index == nil {
		s.index = make(map[string]int)
	}
	i, ok := s.index[h.Name]
	if !ok {
		s.index[h.Name] = len(s.hosts)
		s.hosts = append(s.hosts, h)
		return checkSlots(h)
	}
	m := &s.hosts[i]
	if h.User != "" && m.User != "" && h.User != m.User {
		return fmt.Sprintf("host %s was given before with user %s, now with %s", h.Name, quote(m.User), quote(h.User))
	}
	if h.User != "" {
		m.User = h.User
	}
	m.Slots += h.Slots
	if h.MaxSlots != 0 {
		m.MaxSlots = h.MaxSlots
	}
	return checkSlots(*m)
}

func checkSlots(h Host) string {
	if h.Slots > maxCount {
		return fmt.Sprintf("host %s has %d slots, more than the %d supported", h.Name, h.Slots, maxCount)
	}
	if h.MaxSlots != 0 && h.Slots > h.MaxSlots {
		return fmt.Sprintf("host %s has %d slots, more than its max_slots=%d", h.Name, h.Slots, h.MaxSlots)
	}
	return ""
}

// splitUser splits "user@host" (the last "@" counts, as for ssh).
func splitUser(s string) (user, host, why string) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return "", s, ""
	}
	user, host = s[:i], s[i+1:]
	if user == "" {
		return "", "", `empty user before "@"`
	}
	if host == "" {
		return "", "", `empty host after "@"`
	}
	if why := checkName(user, "user"); why != "" {
		return "", "", why
	}
	return user, host, ""
}

// splitCount splits MPICH's "host:N". Only a single colon outside brackets
// introduces a count, so that a bare IPv6 literal ("fd00::1") stays a host.
func splitCount(s string) (host string, n int, given bool, why string) {
	depth, colons, at := 0, 0, -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ':':
			if depth == 0 {
				colons++
				at = i
			}
		}
	}
	if colons != 1 {
		return s, 0, false, ""
	}
	n, why = parseCount(s[at+1:], "slot count")
	if why != "" {
		return "", 0, false, why
	}
	return s[:at], n, true, ""
}

// maxCount bounds slot and task counts: large enough for any host, small
// enough that sums over MaxHosts hosts cannot overflow.
const maxCount = 1 << 20

// parseCount parses a positive decimal count.
func parseCount(s, what string) (int, string) {
	if s == "" {
		return 0, what + " is empty"
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Sprintf("%s %s is not a decimal number", what, quote(s))
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > maxCount {
		return 0, fmt.Sprintf("%s %s is too large", what, quote(s))
	}
	if n < 1 {
		return 0, fmt.Sprintf("%s must be at least 1", what)
	}
	return n, ""
}

// checkName accepts the characters of host names, IPv4 and bare IPv6
// literals (with a %zone) and login names. A leading "-" is refused: the
// name ends up on ssh's command line, where it would be an option.
func checkName(s, what string) string {
	if s == "" {
		return "empty " + what + " name"
	}
	if s[0] == '-' {
		return fmt.Sprintf("%s name %s starts with \"-\"", what, quote(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == '_':
		case what == "host" && (c == ':' || c == '%'):
		default:
			return fmt.Sprintf("%s name %s has the character %q", what, quote(s), c)
		}
	}
	return ""
}

// expandHostSpec expands "[user@]hostlist[:N]", the host part of a hostfile
// line or of a -H entry, into hosts with the given slots (or 1 each).
// countGiven reports whether ":N" was written.
func expandHostSpec(spec string) (hosts []Host, countGiven bool, why string) {
	user, rest, why := splitUser(spec)
	if why != "" {
		return nil, false, why
	}
	name, n, given, why := splitCount(rest)
	if why != "" {
		return nil, false, why
	}
	if !given {
		n = 1
	}
	names, _, why := expandHostlist(name)
	if why != "" {
		return nil, false, why
	}
	for _, nm := range names {
		if why := checkName(nm, "host"); why != "" {
			return nil, false, why
		}
		if strings.Contains(nm, ":") {
			// Only IPv6 literals hold colons. Anything else is host:N that
			// did not parse as such, e.g. "a:1,b:2" on a hostfile line.
			if a, err := netip.ParseAddr(nm); err != nil || !a.Is6() {
				return nil, false, fmt.Sprintf("host name %s has a colon but is not an IPv6 address (one host:N per line)", quote(nm))
			}
		}
		hosts = append(hosts, Host{Name: nm, User: user, Slots: n})
	}
	return hosts, given, ""
}

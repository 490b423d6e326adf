package netio

import (
	"errors"
	"fmt"
	"strings"
)

// IfSpec is a parsed HCCL_SOCKET_IFNAME, whose grammar is NCCL's
// NCCL_SOCKET_IFNAME:
//
//	eth,ib       use interfaces whose name starts with eth or ib
//	=eth0        use exactly eth0 (a comma list of exact names is allowed)
//	^docker,lo   use any interface except those starting with docker or lo
//	^=eth0       use any interface except exactly eth0
//
// The zero IfSpec (from the empty string) means "no preference": the
// chooser's defaults apply.
type IfSpec struct {
	Exclude bool     // ^: the names are to be avoided, not chosen
	Exact   bool     // =: the names match whole, not as prefixes
	Names   []string // never empty unless the spec is the zero one
}

// ErrBadIfSpec reports text that is not in the HCCL_SOCKET_IFNAME grammar.
var ErrBadIfSpec = errors.New("netio: bad HCCL_SOCKET_IFNAME")

// ParseIfSpec parses s; surrounding blanks are ignored.
func ParseIfSpec(s string) (IfSpec, error) {
	orig := s
	s = strings.TrimSpace(s)
	var spec IfSpec
	if s == "" {
		return spec, nil
	}
	if rest, ok := strings.CutPrefix(s, "^"); ok {
		spec.Exclude, s = true, rest
	}
	if rest, ok := strings.CutPrefix(s, "="); ok {
		spec.Exact, s = true, rest
	}
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return IfSpec{}, fmt.Errorf("%w %q: empty interface name", ErrBadIfSpec, orig)
		}
		if strings.ContainsAny(name, "^=/ \t") {
			return IfSpec{}, fmt.Errorf("%w %q: invalid interface name %q", ErrBadIfSpec, orig, name)
		}
		spec.Names = append(spec.Names, name)
	}
	return spec, nil
}

// IsZero reports whether the spec states no preference.
func (s IfSpec) IsZero() bool { return len(s.Names) == 0 }

// String returns the spec in HCCL_SOCKET_IFNAME form.
func (s IfSpec) String() string {
	var b strings.Builder
	if s.Exclude {
		b.WriteByte('^')
	}
	if s.Exact {
		b.WriteByte('=')
	}
	b.WriteString(strings.Join(s.Names, ","))
	return b.String()
}

// matchName reports whether name is one of the spec's names (whole or as a
// prefix, as the spec says), regardless of Exclude.
func (s IfSpec) matchName(name string) bool {
	for _, n := range s.Names {
		if name == n || (!s.Exact && strings.HasPrefix(name, n)) {
			return true
		}
	}
	return false
}

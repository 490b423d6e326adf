package placement

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxHostfileBytes bounds a hostfile: 16 MiB holds MaxHosts lines of
// 250 bytes. A larger file (or /dev/zero) is a mistake, refused without
// reading it all.
const MaxHostfileBytes = 16 << 20

// ReadHostfile reads and parses the hostfile at path (see ParseHostfile).
func ReadHostfile(path string) ([]Host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hostfile: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxHostfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("hostfile: %w", err)
	}
	if len(data) > MaxHostfileBytes {
		return nil, &SyntaxError{Source: path, Msg: fmt.Sprintf("more than the %d MiB a hostfile may have", MaxHostfileBytes>>20)}
	}
	return ParseHostfile(path, data)
}

// ParseHostfile parses a hostfile; name is only used in errors. It accepts
// Open MPI's format and MPICH's, one host (or hostlist) per line:
//
//	# comment                  blank lines and "#" to end of line are ignored
//	node1 slots=4 max_slots=8  Open MPI; "slots = 4" is fine too
//	alice@node2 slots=2        login user for ssh
//	node[03-04] slots=2        Slurm hostlist: node03 and node04, 2 slots each
//	node5:4                    MPICH: 4 slots
//	node6                      1 slot
//	node1 slots=2              a repeated host adds its slots (node1 now has 6)
//
// Attribute names follow Open MPI's lexer: slots (also slot, cpu, cpus,
// count), max_slots (also max-slots, maxslots, slots_max, slots-max) and
// user (also username, user_name, user-name). Anything else is an error, as
// is a slot count above max_slots. Errors are *SyntaxError naming
// name:line and the token.
//
// Hosts come back in order of first appearance. An empty hostfile is an
// error: it offers no place to run.
func ParseHostfile(name string, data []byte) ([]Host, error) {
	var set hostSet
	for n, line := range strings.Split(string(data), "\n") {
		if err := parseHostfileLine(&set, line); err != nil {
			err.Source, err.Line = name, n+1
			return nil, err
		}
	}
	if len(set.hosts) == 0 {
		return nil, &SyntaxError{Source: name, Msg: "no hosts"}
	}
	return set.hosts, nil
}

func parseHostfileLine(set *hostSet, line string) *SyntaxError {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	toks := joinAssignments(strings.Fields(line))
	if len(toks) == 0 {
		return nil
	}
	spec := toks[0]
	if strings.Contains(spec, "=") {
		return &SyntaxError{Token: spec, Msg: "a line starts with a host name, not an attribute"}
	}
	hosts, countGiven, why := expandHostSpec(spec)
	if why != "" {
		return &SyntaxError{Token: spec, Msg: why}
	}
	slots, maxSlots, user := 0, 0, ""
	for _, tok := range toks[1:] {
		key, val, ok := strings.Cut(tok, "=")
		if !ok {
			return &SyntaxError{Token: tok, Msg: `want attribute=value (e.g. slots=4)`}
		}
		switch strings.ToLower(key) {
		case "slots", "slot", "cpu", "cpus", "count":
			if slots != 0 || countGiven {
				return &SyntaxError{Token: tok, Msg: "slot count given twice"}
			}
			slots, why = parseCount(val, "slot count")
		case "max_slots", "max-slots", "maxslots", "slots_max", "slots-max":
			if maxSlots != 0 {
				return &SyntaxError{Token: tok, Msg: "max_slots given twice"}
			}
			maxSlots, why = parseCount(val, "max_slots")
		case "user", "username", "user_name", "user-name":
			if user != "" || (hosts[0].User != "" && hosts[0].User != val) {
				return &SyntaxError{Token: tok, Msg: "user given twice"}
			}
			user, why = val, checkName(val, "user")
		default:
			why = fmt.Sprintf("unknown attribute %s", quote(key))
		}
		if why != "" {
			return &SyntaxError{Token: tok, Msg: why}
		}
	}
	for _, h := range hosts {
		if slots != 0 {
			h.Slots = slots
		}
		h.MaxSlots = maxSlots
		if user != "" {
			h.User = user
		}
		if why := set.add(h); why != "" {
			return &SyntaxError{Token: spec, Msg: why}
		}
	}
	return nil
}

// joinAssignments glues "slots", "=", "4" (and "slots=", "4" or "slots",
// "=4") back into "slots=4", which Open MPI's lexer also accepts.
func joinAssignments(fields []string) []string {
	var out []string
	for _, f := range fields {
		if n := len(out); n > 0 && (strings.HasSuffix(out[n-1], "=") || strings.HasPrefix(f, "=")) {
			out[n-1] += f
			continue
		}
		out = append(out, f)
	}
	return out
}

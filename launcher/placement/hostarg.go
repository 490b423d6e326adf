package placement

import "strings"

// ParseHostList parses the -H/--host argument: comma-separated entries
// "[user@]host[:N]", where host may be a Slurm hostlist ("node[1-4]:2" gives
// four hosts of 2 slots; commas inside brackets belong to the hostlist). An
// entry without ":N" gives 1 slot, and repeated hosts add up, so "-H a,a,b"
// is a with 2 slots and b with 1, as in Open MPI. A bare IPv6 literal has
// more than one colon and takes no count; put it in a hostfile to give it
// slots. Errors are *SyntaxError with Source "-H".
func ParseHostList(s string) ([]Host, error) {
	hosts, _, err := parseHostList(s)
	return hosts, err
}

// parseHostList also reports, per returned host, whether any of its entries
// wrote a count, which Resolve needs.
func parseHostList(s string) ([]Host, map[string]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil, &SyntaxError{Source: "-H", Msg: "empty host list"}
	}
	entries, tok, why := splitTopLevel(s)
	if why != "" {
		return nil, nil, &SyntaxError{Source: "-H", Token: tok, Msg: why}
	}
	var set hostSet
	counted := make(map[string]bool)
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, nil, &SyntaxError{Source: "-H", Token: s, Msg: "empty host entry"}
		}
		hosts, given, why := expandHostSpec(e)
		if why != "" {
			return nil, nil, &SyntaxError{Source: "-H", Token: e, Msg: why}
		}
		for _, h := range hosts {
			if why := set.add(h); why != "" {
				return nil, nil, &SyntaxError{Source: "-H", Token: e, Msg: why}
			}
			counted[h.Name] = counted[h.Name] || given
		}
	}
	return set.hosts, counted, nil
}

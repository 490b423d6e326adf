package placement

import "fmt"

// Resolve returns the hosts of a job from the CLI's -hostfile path and -H
// argument, either of which may be empty:
//
//   - neither: Localhost();
//   - only one: that one;
//   - both: as in Open MPI, -H selects hosts of the hostfile. Every -H host
//     must be in the hostfile; the result lists them in -H order, with the
//     hostfile's user and max_slots, and the slots -H gives when it writes
//     a count, the hostfile's otherwise.
func Resolve(hostfile, hostList string) ([]Host, error) {
	switch {
	case hostfile == "" && hostList == "":
		return Localhost(), nil
	case hostList == "":
		return ReadHostfile(hostfile)
	case hostfile == "":
		return ParseHostList(hostList)
	}
	file, err := ReadHostfile(hostfile)
	if err != nil {
		return nil, err
	}
	sel, counted, err := parseHostList(hostList)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]Host, len(file))
	for _, h := range file {
		byName[h.Name] = h
	}
	out := make([]Host, 0, len(sel))
	for _, s := range sel {
		h, ok := byName[s.Name]
		if !ok {
			return nil, fmt.Errorf("-H host %s is not in hostfile %s", s.Name, hostfile)
		}
		if s.User != "" && h.User != "" && s.User != h.User {
			return nil, fmt.Errorf("-H gives host %s user %s, hostfile %s gives %s", s.Name, quote(s.User), hostfile, quote(h.User))
		}
		if s.User != "" {
			h.User = s.User
		}
		if counted[s.Name] {
			h.Slots = s.Slots
		}
		if why := checkSlots(h); why != "" {
			return nil, fmt.Errorf("-H %s: %s in hostfile %s", s.Name, why, hostfile)
		}
		out = append(out, h)
	}
	return out, nil
}

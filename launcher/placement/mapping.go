package placement

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hcclrun/hcclrun/ranktable"
)

// MapBy is the --map-by policy: how ranks are spread over hosts.
type MapBy int

const (
	// MapBySlot fills each host's slots before moving to the next host
	// (Open MPI's default when a host list is given).
	MapBySlot MapBy = iota
	// MapByNode deals ranks to hosts round robin, one at a time, skipping
	// full hosts. Ranks are still numbered contiguously per host (see the
	// package documentation).
	MapByNode
)

func (m MapBy) String() string {
	switch m {
	case MapBySlot:
		return "slot"
	case MapByNode:
		return "node"
	}
	return fmt.Sprintf("MapBy(%d)", int(m))
}

// ParseMapBy parses a --map-by value: "slot" or "node", any case.
func ParseMapBy(s string) (MapBy, error) {
	switch strings.ToLower(s) {
	case "slot":
		return MapBySlot, nil
	case "node":
		return MapByNode, nil
	}
	return 0, fmt.Errorf("--map-by %s: want slot or node", quote(s))
}

// Options are mpirun's mapping flags.
type Options struct {
	// NP is -np: the number of ranks. 0 means one per slot of all hosts,
	// or PerNode on each host when PerNode is set.
	NP int
	// MapBy is --map-by.
	MapBy MapBy
	// PerNode is -N/--npernode: exactly this many ranks on each host, hosts
	// taken in order (so with NP < PerNode*len(hosts) the last hosts get
	// fewer or none). 0 means unset. It conflicts with MapByNode, as
	// "ppr" conflicts with --map-by node in Open MPI.
	PerNode int
	// Oversubscribe is --oversubscribe: allow more ranks on a host than it
	// has slots. MaxSlots stays a hard limit.
	Oversubscribe bool
}

// ErrNotEnoughSlots is wrapped by Map's error when the hosts cannot take
// the requested ranks.
var ErrNotEnoughSlots = errors.New("not enough slots")

// unlimited stands for a host without max_slots.
const unlimited = int(^uint(0) >> 1)

// Map places ranks on hosts. The rank counts per host follow Open MPI:
//
//   - map-by slot: fill host 0's slots, then host 1's, and so on;
//   - map-by node: one rank per host in turn, skipping hosts whose slots
//     are full;
//   - -N K: K ranks on each host in order;
//   - with --oversubscribe, ranks beyond the slots are dealt round robin
//     over the hosts still below max_slots, so that the excess is even
//     (the first hosts get the remainder), as Open MPI balances it.
//
// More ranks than slots without --oversubscribe, or than max_slots allow at
// all, is an error wrapping ErrNotEnoughSlots and naming the numbers; more
// than ranktable.MaxRanks ranks, asked for or given by the slots, is an
// error too.
// Whatever the policy, each host's ranks are then numbered contiguously,
// host by host in the order given; hosts that get no rank are left out of
// the Placement.
func Map(hosts []Host, opts Options) (*Placement, error) {
	if err := checkHosts(hosts); err != nil {
		return nil, err
	}
	if opts.NP < 0 {
		return nil, fmt.Errorf("placement: -np %d is negative", opts.NP)
	}
	if opts.PerNode < 0 {
		return nil, fmt.Errorf("placement: -N %d is negative", opts.PerNode)
	}
	if opts.NP > ranktable.MaxRanks {
		return nil, fmt.Errorf("placement: -np %d is more than the %d ranks a job may have", opts.NP, ranktable.MaxRanks)
	}
	var counts []int
	var err error
	switch {
	case opts.PerNode > 0 && opts.MapBy == MapByNode:
		return nil, fmt.Errorf("placement: -N %d conflicts with --map-by node", opts.PerNode)
	case opts.PerNode > 0:
		counts, err = mapPerNode(hosts, opts)
	case opts.MapBy == MapBySlot || opts.MapBy == MapByNode:
		counts, err = mapSpread(hosts, opts)
	default:
		return nil, fmt.Errorf("placement: unknown mapping policy %v", opts.MapBy)
	}
	if err != nil {
		return nil, err
	}
	// Without -np the slots say how many: bounded like -np, before a
	// rank is placed.
	total := 0
	for _, c := range counts {
		total += c
		if total > ranktable.MaxRanks {
			return nil, fmt.Errorf("placement: the hosts' slots make more than the %d ranks a job may have (give -np)", ranktable.MaxRanks)
		}
	}
	p := &Placement{MapBy: opts.MapBy, PerNode: opts.PerNode}
	rank := 0
	for i, h := range hosts {
		if counts[i] == 0 {
			continue
		}
		p.Nodes = append(p.Nodes, Node{Host: h, FirstRank: rank, Ranks: counts[i]})
		rank += counts[i]
	}
	return p, nil
}

func checkHosts(hosts []Host) error {
	if len(hosts) == 0 {
		return errors.New("placement: no hosts")
	}
	seen := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		if why := checkName(h.Name, "host"); why != "" {
			return fmt.Errorf("placement: %s", why)
		}
		if seen[h.Name] {
			return fmt.Errorf("placement: host %s listed twice", h.Name)
		}
		seen[h.Name] = true
		if h.Slots < 1 {
			return fmt.Errorf("placement: host %s has %d slots, want at least 1", h.Name, h.Slots)
		}
		if h.MaxSlots < 0 || h.Slots > maxCount || h.MaxSlots > maxCount {
			return fmt.Errorf("placement: host %s has slots=%d max_slots=%d, want 0..%d", h.Name, h.Slots, h.MaxSlots, maxCount)
		}
		if why := checkSlots(h); why != "" {
			return fmt.Errorf("placement: %s", why)
		}
	}
	return nil
}

func hardCap(h Host) int {
	if h.MaxSlots == 0 {
		return unlimited
	}
	return h.MaxSlots
}

func mapPerNode(hosts []Host, opts Options) ([]int, error) {
	k := opts.PerNode
	np := opts.NP
	if np == 0 {
		np = k * len(hosts)
	}
	if np > k*len(hosts) {
		return nil, fmt.Errorf("placement: -np %d exceeds -N %d on %d hosts (%d ranks): %w",
			np, k, len(hosts), k*len(hosts), ErrNotEnoughSlots)
	}
	counts := make([]int, len(hosts))
	for i, h := range hosts {
		c := min(k, np)
		np -= c
		counts[i] = c
		if c > hardCap(h) {
			return nil, fmt.Errorf("placement: -N %d exceeds max_slots=%d of host %s: %w", k, h.MaxSlots, h.Name, ErrNotEnoughSlots)
		}
		if c > h.Slots && !opts.Oversubscribe {
			return nil, fmt.Errorf("placement: -N %d exceeds the %d slots of host %s (use --oversubscribe): %w",
				k, h.Slots, h.Name, ErrNotEnoughSlots)
		}
	}
	return counts, nil
}

// mapSpread implements map-by slot and map-by node, including the
// oversubscribed excess.
func mapSpread(hosts []Host, opts Options) ([]int, error) {
	total, hard := 0, 0
	for _, h := range hosts {
		total += h.Slots
		if c := hardCap(h); c == unlimited || hard == unlimited {
			hard = unlimited
		} else {
			hard += c // counts are at most 1<<20 each: no overflow
		}
	}
	np := opts.NP
	if np == 0 {
		np = total
	}
	if np > total && !opts.Oversubscribe {
		return nil, fmt.Errorf("placement: %d ranks requested but the %d hosts have %d slots (use --oversubscribe): %w",
			np, len(hosts), total, ErrNotEnoughSlots)
	}
	if np > hard {
		return nil, fmt.Errorf("placement: %d ranks requested but max_slots allows only %d on the %d hosts: %w",
			np, hard, len(hosts), ErrNotEnoughSlots)
	}
	counts := make([]int, len(hosts))
	left := np
	if opts.MapBy == MapBySlot {
		for i, h := range hosts {
			counts[i] = min(h.Slots, left)
			left -= counts[i]
		}
	} else {
		left = roundRobin(hosts, counts, left, func(h Host) int { return h.Slots })
	}
	// The excess, if any (oversubscription was checked above), goes round
	// robin over the hosts below their hard limit; it terminates because
	// np <= hard.
	roundRobin(hosts, counts, left, hardCap)
	return counts, nil
}

// roundRobin deals up to left ranks one per host in turn, each pass
// starting at host 0, to hosts below limit(h), and returns how many could
// not be placed. Whole passes are done in bulk, so the cost is
// O(hosts^2) however many ranks there are.
func roundRobin(hosts []Host, counts []int, left int, limit func(Host) int) int {
	for left > 0 {
		eligible, room := 0, unlimited
		for i, h := range hosts {
			if r := limit(h) - counts[i]; r > 0 {
				eligible++
				room = min(room, r)
			}
		}
		if eligible == 0 {
			break
		}
		if passes := min(room, left/eligible); passes > 0 {
			for i, h := range hosts {
				if counts[i] < limit(h) {
					counts[i] += passes
				}
			}
			left -= passes * eligible
			continue
		}
		// Fewer ranks than eligible hosts: one last partial pass.
		for i, h := range hosts {
			if left > 0 && counts[i] < limit(h) {
				counts[i]++
				left--
			}
		}
	}
	return left
}

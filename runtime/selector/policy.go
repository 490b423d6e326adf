package selector

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Policy is a parsed HCCL_ALGO: for each collective, either no constraint,
// a list of algorithms to choose among (forced), or a list to avoid. The
// zero Policy constrains nothing.
//
// Grammar, NCCL-like (spaces and case are ignored):
//
//	spec   = clause { ";" clause }
//	clause = [ coll ":" ] [ "^" ] name { "," name }
//	coll   = "allreduce" | "broadcast" | "reduce" | "allgather" |
//	         "reducescatter" | "alltoall" | "alltoallv" | "barrier"
//
// A clause without a collective applies to every collective that has no
// clause of its own; "^" excludes the names instead of forcing them.
// Examples: "ring", "^ring", "allreduce:rhd;allgather:pat",
// "ring;barrier:dissemination".
type Policy struct {
	spec string
	all  rule
	per  map[plan.Coll]rule
}

// rule is one clause.
type rule struct {
	set     bool
	exclude bool
	names   []string
}

func (r rule) String() string {
	s := strings.Join(r.names, ",")
	if r.exclude {
		s = "^" + s
	}
	return s
}

// collectives lists what HCCL_ALGO can name, by their grammar names.
var collectives = []plan.Coll{plan.AllReduce, plan.Broadcast, plan.Reduce, plan.AllGather,
	plan.ReduceScatter, plan.AlltoAll, plan.AlltoAllV, plan.Barrier}

// ParseColl parses a collective's name as HCCL_ALGO and the CLI spell it,
// case-insensitively: "allreduce", "allgather", "alltoallv", ...
func ParseColl(s string) (plan.Coll, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, c := range collectives {
		if strings.ToLower(c.String()) == s {
			return c, nil
		}
	}
	return 0, fmt.Errorf("unknown collective %q", s)
}

// ParseAlgo parses an HCCL_ALGO value. Unknown algorithm or collective
// names, empty lists, two clauses for one collective and a clause that
// forces a collective onto algorithms none of which implements it are
// errors.
func ParseAlgo(spec string) (Policy, error) {
	p := Policy{spec: strings.TrimSpace(spec), per: map[plan.Coll]rule{}}
	if p.spec == "" {
		return p, nil
	}
	for _, clause := range strings.Split(p.spec, ";") {
		clause = strings.TrimSpace(clause)
		if clause == "" {
			continue
		}
		var coll plan.Coll
		list := clause
		if c, rest, ok := strings.Cut(clause, ":"); ok {
			var err error
			if coll, err = ParseColl(c); err != nil {
				return Policy{}, fmt.Errorf("HCCL_ALGO %q: %w", spec, err)
			}
			list = rest
		}
		r, err := parseRule(list)
		if err != nil {
			return Policy{}, fmt.Errorf("HCCL_ALGO %q: clause %q: %w", spec, clause, err)
		}
		if coll == 0 {
			if p.all.set {
				return Policy{}, fmt.Errorf("HCCL_ALGO %q: two clauses for every collective", spec)
			}
			p.all = r
			continue
		}
		if _, dup := p.per[coll]; dup {
			return Policy{}, fmt.Errorf("HCCL_ALGO %q: two clauses for %s", spec, coll)
		}
		if !r.exclude && !slices.ContainsFunc(r.names, func(n string) bool {
			a, _ := algo.Lookup(n)
			return algo.Serves(a, coll)
		}) {
			return Policy{}, fmt.Errorf("HCCL_ALGO %q: %s forced onto %s, which does not implement it", spec, coll, r)
		}
		p.per[coll] = r
	}
	return p, nil
}

func parseRule(list string) (rule, error) {
	r := rule{set: true}
	list = strings.TrimSpace(list)
	if strings.HasPrefix(list, "^") {
		r.exclude = true
		list = list[1:]
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			return rule{}, fmt.Errorf("empty algorithm name")
		}
		if _, ok := algo.Lookup(name); !ok {
			return rule{}, fmt.Errorf("unknown algorithm %q (known: %s)", name, known())
		}
		if !slices.Contains(r.names, name) {
			r.names = append(r.names, name)
		}
	}
	return r, nil
}

func known() string {
	var ns []string
	for _, a := range algo.All() {
		ns = append(ns, a.Name())
	}
	return strings.Join(ns, ", ")
}

// String returns the spec the policy was parsed from.
func (p Policy) String() string { return p.spec }

// ruleFor is the clause that governs coll.
func (p Policy) ruleFor(coll plan.Coll) rule {
	if r, ok := p.per[coll]; ok {
		return r
	}
	return p.all
}

// Forced tells whether the policy restricts coll to a list of algorithms.
func (p Policy) Forced(coll plan.Coll) bool {
	r := p.ruleFor(coll)
	return r.set && !r.exclude
}

// allows tells whether the policy lets name serve coll, and why not.
func (p Policy) allows(coll plan.Coll, name string) (bool, string) {
	r := p.ruleFor(coll)
	switch {
	case !r.set:
		return true, ""
	case r.exclude && slices.Contains(r.names, name):
		return false, fmt.Sprintf("excluded by HCCL_ALGO %q", p.spec)
	case !r.exclude && !slices.Contains(r.names, name):
		return false, fmt.Sprintf("not in HCCL_ALGO %q", p.spec)
	}
	return true, ""
}

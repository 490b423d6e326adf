package selector

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// Policy is a parsed HCCL_ALGO: for each collective and for calls within
// one server or across several, either no constraint, a list of
// algorithms to choose among (forced), or a list to avoid. The zero Policy
// constrains nothing.
//
// HCCL_ALGO has two grammars. Ours, NCCL-like (spaces and case are
// ignored), whose clauses hold whatever the servers:
//
//	spec   = clause { ";" clause }
//	clause = [ coll ":" ] [ "^" ] name { "," name }
//	coll   = "allreduce" | "broadcast" | "reduce" | "allgather" |
//	         "reducescatter" | "alltoall" | "alltoallv" | "barrier"
//
// A clause without a collective applies to every collective that has no
// clause of its own; "^" excludes the names instead of forcing them.
// Examples: "ring", "^ring", "allreduce:rhd;allgather:pat",
// "ring;barrier:dissemination". And HCCL's, "level0:NA;level1:H-D_R" or
// "allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R",
// whose level0 governs the calls within one server and level1 those
// across servers, with HCCL's algorithm names mapped to ours (hccl.go;
// docs/selector.md#hccls-own-grammar).
type Policy struct {
	spec string
	all  levels
	per  map[plan.Coll]levels
}

// levels is the rule for calls within one server ([0], HCCL's level0)
// and for calls across servers ([1], level1). Our grammar's clauses give
// both the same rule.
type levels [2]rule

func both(r rule) levels { return levels{r, r} }

// level is the index into levels for a call on servers servers.
func level(servers int) int {
	if servers > 1 {
		return 1
	}
	return 0
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
	p := Policy{spec: strings.TrimSpace(spec), per: map[plan.Coll]levels{}}
	if p.spec == "" {
		return p, nil
	}
	if hcclForm(p.spec) {
		return parseHCCL(p)
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
			if p.all[0].set {
				return Policy{}, fmt.Errorf("HCCL_ALGO %q: two clauses for every collective", spec)
			}
			p.all = both(r)
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
		p.per[coll] = both(r)
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

// ruleFor is the clause that governs coll on servers servers.
func (p Policy) ruleFor(coll plan.Coll, servers int) rule {
	if r, ok := p.per[coll]; ok {
		return r[level(servers)]
	}
	return p.all[level(servers)]
}

// Forced tells whether the policy restricts coll to a list of algorithms,
// within one server or across servers.
func (p Policy) Forced(coll plan.Coll) bool {
	return p.forced(coll, 1) || p.forced(coll, 2)
}

// forced tells whether the policy restricts coll on servers servers.
func (p Policy) forced(coll plan.Coll, servers int) bool {
	r := p.ruleFor(coll, servers)
	return r.set && !r.exclude
}

// allows tells whether the policy lets name serve coll on servers
// servers, and why not.
func (p Policy) allows(coll plan.Coll, servers int, name string) (bool, string) {
	r := p.ruleFor(coll, servers)
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

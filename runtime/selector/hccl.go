package selector

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// HCCL's own HCCL_ALGO grammar, beside ours (policy.go), so that a job
// script written for HCCL runs unchanged:
//
//	spec   = levels | opconf { "/" opconf }
//	opconf = op "=" levels
//	levels = level { ";" level }
//	level  = ( "level0" | "level1" | "level2" | "level3" ) ":" name
//
// level0 is the algorithm within a server, level1 between servers (level2
// and level3, between superpods, have no counterpart here and take NA
// only). HCCL documents level0 as NA only; a call within one server is
// governed by level0 and a call across servers by level1, as HCCL ignores
// level1 on one server. NA, or a level left out, lets the selector choose.
// "others=" applies to the collectives without a clause of their own;
// "alltoall=" also governs AlltoAllV, as in HCCL. The two forms do not mix,
// and the global one appears once.
//
// HCCL's names map to ours as faithfully as our algorithms allow
// (hcclNames; the table is in docs/selector.md#hccls-own-grammar). A name
// we cannot serve, at a level or for a collective named, fails ParseAlgo,
// saying what is accepted. Collectives hcclrun does not have (scatter,
// gather, send, receive, sendrecv) may be named and constrain nothing.

// hcclName is what one of HCCL's algorithm names means here: for each
// level, the collectives it governs and the algorithms of ours it forces
// for each. A level without an entry cannot be served (why says why).
type hcclName struct {
	name  string // HCCL's spelling
	ours  [2]map[plan.Coll][]string
	why   [2]string
	about string // what HCCL documents it as, for error messages
}

// Our algorithms for the collectives HCCL's level1 algorithms exist for.
var (
	flatColls   = []plan.Coll{plan.AllReduce, plan.AllGather, plan.ReduceScatter, plan.Broadcast, plan.Reduce}
	alltoalls   = []plan.Coll{plan.AlltoAll, plan.AlltoAllV}
	meshColls   = []plan.Coll{plan.AllReduce, plan.ReduceScatter, plan.AllGather, plan.Broadcast, plan.Reduce, plan.AlltoAll, plan.AlltoAllV, plan.Barrier}
	hcclUnknown = "hcclrun has no such algorithm"
)

func forEach(colls []plan.Coll, f func(plan.Coll) []string) map[plan.Coll][]string {
	m := map[plan.Coll][]string{}
	for _, c := range colls {
		m[c] = f(c)
	}
	return m
}

func same(names ...string) func(plan.Coll) []string {
	return func(plan.Coll) []string { return names }
}

// logSteps is our log-step algorithms for any rank count: NHR's and NB's
// counterparts. PAT moves no more than n-1 blocks per rank for any n, as
// NHR and NB do; rhd folds a rank count that is not a power of two, which
// costs AllReduce the extra traffic NHR avoids, but it is our only
// log-step AllReduce.
func logSteps(c plan.Coll) []string {
	switch c {
	case plan.AllReduce:
		return []string{"rhd"}
	case plan.AllGather, plan.ReduceScatter:
		return []string{"pat"}
	}
	return []string{"tree"}
}

// halvingDoubling is H-D_R's counterpart: recursive halving and doubling
// (rhd), and between servers also hier, whose server phase is a ring and
// whose phase between servers is rhd, as HCCL runs H-D_R between servers
// under its own algorithm within them. Broadcast and Reduce, which rhd
// does not serve, take the binomial tree, whose rounds double the
// distance as H-D_R's do.
func halvingDoubling(servers bool) func(plan.Coll) []string {
	return func(c plan.Coll) []string {
		var ns []string
		if servers {
			ns = append(ns, "hier")
		}
		if c == plan.Broadcast || c == plan.Reduce {
			return append(ns, "tree")
		}
		return append(ns, "rhd")
	}
}

var hcclNames = []hcclName{
	{name: "NA", about: "no algorithm forced"},
	{name: "ring", about: "ring", ours: [2]map[plan.Coll][]string{forEach(flatColls, same("ring")), forEach(flatColls, same("ring"))}},
	{name: "H-D_R", about: "recursive halving-doubling",
		ours: [2]map[plan.Coll][]string{forEach(flatColls, halvingDoubling(false)), forEach(flatColls, halvingDoubling(true))}},
	{name: "NHR", about: "nonuniform hierarchical ring", ours: [2]map[plan.Coll][]string{forEach(flatColls, logSteps), forEach(flatColls, logSteps)}},
	{name: "NHR_V1", about: "HCCL's older NHR", ours: [2]map[plan.Coll][]string{forEach(flatColls, logSteps), forEach(flatColls, logSteps)}},
	{name: "NB", about: "nonuniform Bruck", ours: [2]map[plan.Coll][]string{forEach(flatColls, logSteps), forEach(flatColls, logSteps)}},
	{name: "pipeline", about: "two levels, servers' links and the network's at once",
		ours: [2]map[plan.Coll][]string{nil, forEach(flatColls, same("hier"))},
		why:  [2]string{"pipeline is an algorithm between servers (level1)", ""}},
	{name: "pairwise", about: "pairwise exchange", ours: [2]map[plan.Coll][]string{forEach(alltoalls, same("pairwise")), forEach(alltoalls, same("pairwise"))}},
	{name: "fullmesh", about: "all peers at once",
		ours: [2]map[plan.Coll][]string{forEach(meshColls, func(c plan.Coll) []string {
			if c == plan.AllReduce {
				return []string{"mesh", "oneshot"}
			}
			return []string{"mesh"}
		}), nil},
		why: [2]string{"", "hcclrun's mesh runs within one server (level0)"}},
	{name: "AHC", about: "asymmetric hierarchical concatenate", why: [2]string{hcclUnknown, hcclUnknown}},
	{name: "AHC_BROKE", about: "asymmetric hierarchical concatenate", why: [2]string{hcclUnknown, hcclUnknown}},
	{name: "null", about: "HCCL's internal placeholder", why: [2]string{hcclUnknown, hcclUnknown}},
}

// hcclOps are the collectives HCCL's per-op form names: ours, or none
// (nil) for those hcclrun does not have.
var hcclOps = map[string][]plan.Coll{
	"allreduce":     {plan.AllReduce},
	"allgather":     {plan.AllGather},
	"reducescatter": {plan.ReduceScatter},
	"broadcast":     {plan.Broadcast},
	"reduce":        {plan.Reduce},
	"alltoall":      {plan.AlltoAll, plan.AlltoAllV},
	"alltoallv":     {plan.AlltoAllV},
	"barrier":       {plan.Barrier},
	"scatter":       nil,
	"gather":        nil,
	"send":          nil,
	"receive":       nil,
	"sendrecv":      nil,
}

// hcclForm tells whether spec is in HCCL's grammar: it has an op "=" or
// a clause that names a level, which no clause of ours does.
func hcclForm(spec string) bool {
	if strings.Contains(spec, "=") {
		return true
	}
	for _, c := range strings.Split(spec, ";") {
		if strings.HasPrefix(strings.ToLower(strings.TrimSpace(c)), "level") {
			return true
		}
	}
	return false
}

// parseHCCL parses p.spec in HCCL's grammar into p.
func parseHCCL(p Policy) (Policy, error) {
	spec := p.spec
	bad := func(format string, args ...any) (Policy, error) {
		return Policy{}, fmt.Errorf("HCCL_ALGO %q: %s", spec, fmt.Sprintf(format, args...))
	}
	confs := strings.Split(spec, "/")
	specific := strings.Contains(spec, "=")
	if !specific && len(confs) > 1 {
		return bad(`one "level0:...;level1:..." for every collective, or "op=level0:...;level1:..." clauses separated by "/", not several of the first`)
	}
	var others *hcclLevels
	own := map[plan.Coll]hcclLevels{}
	seen := map[string]bool{}
	for _, conf := range confs {
		conf = strings.TrimSpace(conf)
		op, lv, hasOp := strings.Cut(conf, "=")
		if specific != hasOp {
			return bad("clause %q: the per-collective form (op=level0:...;level1:...) and the global one do not mix", conf)
		}
		op = strings.ToLower(strings.TrimSpace(op))
		if !hasOp {
			lv = conf
		}
		ls, err := parseLevels(lv)
		if err != nil {
			return bad("%q: %v", conf, err)
		}
		if !hasOp {
			others = &ls
			break
		}
		if seen[op] {
			return bad("two clauses for %s", op)
		}
		seen[op] = true
		if op == "others" {
			others = &ls
			continue
		}
		colls, ok := hcclOps[op]
		if !ok {
			return bad("unknown collective %q (HCCL's: allreduce, allgather, reducescatter, broadcast, reduce, alltoall, scatter, others; also alltoallv, barrier)", op)
		}
		for _, c := range colls {
			// Every named collective must be served at the levels named.
			for i, l := range ls {
				if l.name != nil && l.name.name != "NA" && l.name.ours[i][c] == nil {
					return bad("%s=level%d:%s: %s", op, i, l.name.name, cannot(l.name, i, c))
				}
			}
			if op == "alltoall" && c == plan.AlltoAllV && seen["alltoallv"] {
				continue
			}
			own[c] = ls
		}
	}
	for _, c := range collectives {
		if ls, ok := own[c]; ok {
			p.per[c] = ls.rules(c)
			continue
		}
		if others != nil {
			p.per[c] = others.rules(c)
		}
	}
	return p, nil
}

// hcclLevel is one level of a clause: its name, nil when left out.
type hcclLevel struct{ name *hcclName }

// hcclLevels is a clause's level0 and level1.
type hcclLevels [2]hcclLevel

// rules is the levels' rules for collective c: a level whose name
// governs c forces its algorithms; NA, a level left out or a name that
// does not govern c (ring for AlltoAll, in the global form, as in HCCL)
// constrains nothing.
func (ls hcclLevels) rules(c plan.Coll) levels {
	var out levels
	for i, l := range ls {
		if l.name == nil {
			continue
		}
		if names := l.name.ours[i][c]; names != nil {
			out[i] = rule{set: true, names: slices.Clone(names)}
		}
	}
	return out
}

// parseLevels parses "level0:NA;level1:H-D_R".
func parseLevels(s string) (hcclLevels, error) {
	var ls hcclLevels
	var set [4]bool
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		lv, name, ok := strings.Cut(part, ":")
		lv = strings.ToLower(strings.TrimSpace(lv))
		if !ok || len(lv) != len("level0") || !strings.HasPrefix(lv, "level") || lv[5] < '0' || lv[5] > '3' {
			return ls, fmt.Errorf("%q: want level0:<algo>, level1:<algo> (level2, level3: NA)", part)
		}
		i := int(lv[5] - '0')
		if set[i] {
			return ls, fmt.Errorf("level%d twice", i)
		}
		set[i] = true
		n, err := lookupHCCL(strings.TrimSpace(name))
		if err != nil {
			return ls, err
		}
		if i >= 2 {
			if n.name != "NA" {
				return ls, fmt.Errorf("level%d:%s: hcclrun has two tiers, servers and the network between them: level%d takes NA only", i, n.name, i)
			}
			continue
		}
		if n.name != "NA" && n.ours[i] == nil {
			return ls, fmt.Errorf("level%d:%s (%s): %s; level%d accepts %s", i, n.name, n.about, n.why[i], i, accepted(i))
		}
		ls[i] = hcclLevel{name: n}
	}
	return ls, nil
}

// lookupHCCL finds one of HCCL's algorithm names, case-insensitively.
func lookupHCCL(name string) (*hcclName, error) {
	for i := range hcclNames {
		if strings.EqualFold(hcclNames[i].name, name) {
			return &hcclNames[i], nil
		}
	}
	return nil, fmt.Errorf("unknown algorithm %q: level0 accepts %s; level1 accepts %s", name, accepted(0), accepted(1))
}

// accepted lists the names level i serves.
func accepted(i int) string {
	var ns []string
	for _, n := range hcclNames {
		if n.name == "NA" || n.ours[i] != nil {
			ns = append(ns, n.name)
		}
	}
	return strings.Join(ns, ", ")
}

// cannot says why name at level i does not serve c, and what does.
func cannot(n *hcclName, i int, c plan.Coll) string {
	var ns []string
	for _, m := range hcclNames {
		if m.name == "NA" || m.ours[i][c] != nil {
			ns = append(ns, m.name)
		}
	}
	return fmt.Sprintf("%s (%s) does not serve %s here; level%d of %s accepts %s", n.name, n.about, c, i, c, strings.Join(ns, ", "))
}

package placement

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts bounds how many host names one expression (or one Slurm task
// list) may expand to: "node[0-99999999]" is a typo, not a cluster.
const MaxHosts = 1 << 16

// ExpandHostlist expands Slurm hostlist syntax into host names, in order:
//
//	node[01-04,07]   node01 node02 node03 node04 node07
//	a[1-2]b,c        a1b a2b c
//	r[1-2]n[1-2]     r1n1 r1n2 r2n1 r2n2   (leftmost bracket varies slowest)
//	n[8-10]          n8 n9 n10
//
// A range keeps the zero padding of its lower bound: its numbers are at least
// as wide as the lower bound is written. Names are not checked here beyond
// being non-empty; duplicates are kept (callers merge them). Errors are
// *SyntaxError with Source "hostlist".
func ExpandHostlist(expr string) ([]string, error) {
	hosts, tok, why := expandHostlist(expr)
	if why != "" {
		return nil, &SyntaxError{Source: "hostlist", Token: tok, Msg: why}
	}
	return hosts, nil
}

// expandHostlist returns the hosts, or the offending part of expr and why.
func expandHostlist(expr string) (hosts []string, tok, why string) {
	items, tok, why := splitTopLevel(expr)
	if why != "" {
		return nil, tok, why
	}
	for _, item := range items {
		if item == "" {
			return nil, expr, "empty host name"
		}
		var err string
		hosts, err = expandItem(item, hosts)
		if err != "" {
			return nil, item, err
		}
	}
	return hosts, "", ""
}

// splitTopLevel splits s at the commas outside brackets and checks that
// brackets balance and do not nest.
func splitTopLevel(s string) (parts []string, tok, why string) {
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			if depth > 0 {
				return nil, s, `nested "["`
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, s, `"]" without "["`
			}
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth > 0 {
		return nil, s, `unclosed "["`
	}
	return append(parts, s[start:]), "", ""
}

// expandItem appends the expansion of one comma-free (at top level) item
// such as "r[1-2]n[01,03]" to out.
func expandItem(item string, out []string) ([]string, string) {
	// Split into literal text and bracket sets, then take the product.
	var texts []string // len(sets)+1 literal pieces around the sets
	var sets [][]string
	rest := item
	for {
		open := strings.IndexByte(rest, '[')
		if open < 0 {
			texts = append(texts, rest)
			break
		}
		end := strings.IndexByte(rest, ']') // exists and follows open: splitTopLevel checked
		texts = append(texts, rest[:open])
		set, why := expandRanges(rest[open+1 : end])
		if why != "" {
			return nil, why
		}
		sets = append(sets, set)
		rest = rest[end+1:]
	}
	n := 1
	for _, s := range sets {
		n *= len(s)
		if n+len(out) > MaxHosts {
			return nil, fmt.Sprintf("expands to more than %d hosts", MaxHosts)
		}
	}
	idx := make([]int, len(sets))
	var b strings.Builder
	for range n {
		b.Reset()
		for k, t := range texts {
			b.WriteString(t)
			if k < len(sets) {
				b.WriteString(sets[k][idx[k]])
			}
		}
		out = append(out, b.String())
		for k := len(idx) - 1; k >= 0; k-- { // odometer: rightmost set varies fastest
			if idx[k]++; idx[k] < len(sets[k]) {
				break
			}
			idx[k] = 0
		}
	}
	return out, ""
}

// expandRanges expands the inside of brackets: "01-04,07".
func expandRanges(s string) ([]string, string) {
	if s == "" {
		return nil, `empty "[]"`
	}
	var out []string
	for r := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, why := rangeBound(lo, r)
		if why != "" {
			return nil, why
		}
		b := a
		if isRange {
			if b, why = rangeBound(hi, r); why != "" {
				return nil, why
			}
			if b < a {
				return nil, fmt.Sprintf("range %s is decreasing", quote(r))
			}
		}
		if len(out)+(b-a+1) > MaxHosts {
			return nil, fmt.Sprintf("expands to more than %d hosts", MaxHosts)
		}
		for v := a; v <= b; v++ {
			num := strconv.Itoa(v)
			if pad := len(lo) - len(num); pad > 0 {
				num = strings.Repeat("0", pad) + num
			}
			out = append(out, num)
		}
	}
	return out, ""
}

func rangeBound(s, r string) (int, string) {
	if s == "" {
		return 0, fmt.Sprintf("range %s has an empty bound", quote(r))
	}
	if len(s) > 9 {
		return 0, fmt.Sprintf("range %s has a bound of more than 9 digits", quote(r))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Sprintf("range %s: %s is not a number", quote(r), quote(s))
		}
	}
	n, _ := strconv.Atoi(s)
	return n, ""
}

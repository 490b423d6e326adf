package runtime

import (
	"fmt"
	"strings"

	"github.com/hcclrun/hcclrun/runtime/algo"
	"github.com/hcclrun/hcclrun/runtime/plan"
)

// defaultAlgorithm is the choice for each collective when HCCL_ALGO says
// nothing.
var defaultAlgorithm = map[plan.Coll]string{
	plan.AllReduce:     "ring",
	plan.AllGather:     "ring",
	plan.ReduceScatter: "ring",
	plan.Broadcast:     "tree",
	plan.Reduce:        "tree",
	plan.AlltoAll:      "pairwise",
	plan.AlltoAllV:     "pairwise",
	plan.Barrier:       "dissemination",
}

// chooseAlgorithm picks the algorithm of req. spec is HCCL_ALGO: either one
// algorithm name for every collective ("ring") or per-collective entries
// ("allreduce:ring;broadcast:tree"). A forced algorithm that cannot serve
// the call fails when it builds the plan, with its reason; it never falls
// back silently.
func chooseAlgorithm(spec string, req *plan.Request, elemSize int) (plan.Algorithm, error) {
	name := defaultAlgorithm[req.Coll]
	if forced, ok, err := forcedAlgorithm(spec, req.Coll); err != nil {
		return nil, err
	} else if ok {
		name = forced
	}
	a, ok := algo.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("HCCL_ALGO: unknown algorithm %q", name)
	}
	return a, nil
}

// forcedAlgorithm reads the entry of spec for coll.
func forcedAlgorithm(spec string, coll plan.Coll) (string, bool, error) {
	if spec == "" {
		return "", false, nil
	}
	var all string
	for _, entry := range strings.Split(spec, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		c, name, hasColl := strings.Cut(entry, ":")
		if !hasColl {
			all = strings.ToLower(entry)
			continue
		}
		if strings.EqualFold(strings.TrimSpace(c), coll.String()) {
			return strings.ToLower(strings.TrimSpace(name)), true, nil
		}
	}
	return all, all != "", nil
}

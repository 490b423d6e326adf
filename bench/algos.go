package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// --algos compares algorithms within one job. On a shared machine whose
// speed changes by the minute, algorithms timed in separate jobs differ by
// when they ran as much as by what they do
// (docs/measurements.md#algorithms-compared-within-one-job). Here every
// size is measured in --rounds
// rounds; each round runs every algorithm's case in turn (warm-up,
// barrier, -n timed iterations, as without --algos), forced with
// Comm.SetAlgo, in an order drawn anew for every round and size (the same
// on every rank: the generator is seeded with both), so that no algorithm
// always follows the same one. An algorithm's time is the
// median over the rounds of its per-round mean; the rounds' means are
// kept in the JSON (samples_us).

// autoAlgo in --algos measures the selector's own choice.
const autoAlgo = "auto"

// traceSuffix on an --algos name ("auto+trace", "ring+trace") measures
// that algorithm with the ranks' HCCL_TRACE recording on, and the name
// without it with recording off (Comm.SetTracing), so that tracing's
// cost is measured within one job (docs/performance.md#tracing-overhead).
// The ranks need HCCL_TRACE set (-x HCCL_TRACE=DIR).
const traceSuffix = "+trace"

// ParseAlgos reads the --algos value, a comma-separated list of algorithm
// names and "auto", for the collectives colls: every algorithm must
// implement every one of them.
func ParseAlgos(s string, colls []Coll) ([]string, error) {
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			return nil, fmt.Errorf("empty algorithm name in %q", s)
		}
		if slices.Contains(out, name) {
			continue
		}
		for _, c := range colls {
			if _, err := selector.ParseAlgo(algoSpec(c, strings.TrimSuffix(name, traceSuffix))); err != nil {
				return nil, err
			}
		}
		out = append(out, name)
	}
	return out, nil
}

// algoSpec is the HCCL_ALGO clause that forces algorithm name for c.
func algoSpec(c Coll, name string) string {
	name = strings.TrimSuffix(name, traceSuffix)
	if name == autoAlgo {
		return ""
	}
	return c.String() + ":" + name
}

// measureAlgos measures one placement of one size with every algorithm of
// the spec in rounds, and returns each algorithm's combined result.
func measureAlgos[T hccl.Element](ctx context.Context, s *sweeper, c Coll, bc *benchCase[T], l Layout, stamps []time.Duration) ([]Result, error) {
	algos := s.sp.Algos
	rounds := make([][]Result, len(algos))
	for round := range s.sp.Rounds {
		order := rand.New(rand.NewPCG(uint64(round), uint64(l.Bytes))).Perm(len(algos))
		for _, a := range order {
			if err := s.comm.SetAlgo(algoSpec(c, algos[a])); err != nil {
				return nil, err
			}
			if traced := strings.HasSuffix(algos[a], traceSuffix); traced || tracing(algos) {
				if err := s.comm.SetTracing(traced); err != nil {
					return nil, err
				}
			}
			res, err := measure(ctx, s, bc, l, stamps)
			if err != nil {
				return nil, fmt.Errorf("algorithm %s: %w", algos[a], err)
			}
			rounds[a] = append(rounds[a], res)
		}
	}
	if err := s.comm.SetAlgo(""); err != nil {
		return nil, err
	}
	out := make([]Result, len(algos))
	for a, rs := range rounds {
		out[a] = combineRounds(rs, l)
	}
	return out, nil
}

// tracing reports whether algos compares runs with and without tracing.
func tracing(algos []string) bool {
	return slices.ContainsFunc(algos, func(a string) bool { return strings.HasSuffix(a, traceSuffix) })
}

// combineRounds is one algorithm's result over its rounds: the median of
// the rounds' means and of their medians, the means as samples, and the
// wrong elements of every round's check.
func combineRounds(rs []Result, l Layout) Result {
	means, medians := make([]float64, len(rs)), make([]float64, len(rs))
	res := Result{Wrong: -1}
	for i, r := range rs {
		means[i], medians[i] = r.TimeUS, r.MedianUS
		if r.Wrong >= 0 {
			res.Wrong = max(res.Wrong, 0) + r.Wrong
		}
	}
	res.Samples = slices.Clone(means)
	res.TimeUS, res.MedianUS = median(means), median(medians)
	res.AlgBW, res.BusBW = l.Bandwidth(res.TimeUS / 1e6)
	return res
}

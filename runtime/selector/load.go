package selector

import (
	"fmt"
	"os"
)

// Load builds a model and policy from an HCCL_ALGO spec (see Policy) and
// a tuning file path ("" for none), a tuning file applied over base
// (see ParseTuning; base is DefaultModel, but for what the caller knows
// better, such as the server's cores). The runtime reads those settings
// from its environment (runtime.SelectorModel); this package reads none.
func Load(base Model, algoSpec, tuningFile string) (Model, Policy, error) {
	m := base
	p, err := ParseAlgo(algoSpec)
	if err != nil {
		return m, Policy{}, err
	}
	if tuningFile != "" {
		f, err := os.Open(tuningFile)
		if err != nil {
			return m, Policy{}, fmt.Errorf("HCCL_TUNING_FILE: %w", err)
		}
		defer f.Close()
		if m, err = ParseTuning(f, m); err != nil {
			return base, Policy{}, fmt.Errorf("HCCL_TUNING_FILE %s: %w", tuningFile, err)
		}
	}
	return m, p, nil
}

package selector

import (
	"fmt"
	"os"
)

// FromEnv builds the model and policy a communicator uses from its
// environment: HCCL_ALGO (see Policy) and HCCL_TUNING_FILE, a tuning file
// applied over DefaultModel (see ParseTuning). getenv is os.Getenv in
// production; the only place this package reads the environment.
func FromEnv(getenv func(string) string) (Model, Policy, error) {
	return Load(getenv("HCCL_ALGO"), getenv("HCCL_TUNING_FILE"))
}

// Load builds a model and policy from an HCCL_ALGO spec and a tuning file
// path ("" for none), for callers that read those settings themselves.
func Load(algoSpec, tuningFile string) (Model, Policy, error) {
	m := DefaultModel()
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
			return DefaultModel(), Policy{}, fmt.Errorf("HCCL_TUNING_FILE %s: %w", tuningFile, err)
		}
	}
	return m, p, nil
}

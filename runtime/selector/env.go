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
	m := DefaultModel()
	p, err := ParseAlgo(getenv("HCCL_ALGO"))
	if err != nil {
		return m, Policy{}, err
	}
	if path := getenv("HCCL_TUNING_FILE"); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return m, Policy{}, fmt.Errorf("HCCL_TUNING_FILE: %w", err)
		}
		defer f.Close()
		if m, err = ParseTuning(f, m); err != nil {
			return DefaultModel(), Policy{}, fmt.Errorf("HCCL_TUNING_FILE %s: %w", path, err)
		}
	}
	return m, p, nil
}

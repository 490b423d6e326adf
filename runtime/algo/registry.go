package algo

import "github.com/hcclrun/hcclrun/runtime/plan"

// registry lists the algorithms in the order the selector breaks cost ties
// and the CLI prints them.
var registry = []plan.Algorithm{
	Ring{},
	Tree{},
	Dissemination{},
	Pairwise{},
	RHD{},
	Mesh{},
	OneShot{},
	PAT{},
	Hier{},
}

// All returns every algorithm, in a fixed order. The slice is the caller's.
func All() []plan.Algorithm {
	return append([]plan.Algorithm(nil), registry...)
}

// Lookup returns the algorithm HCCL_ALGO calls name.
func Lookup(name string) (plan.Algorithm, bool) {
	for _, a := range registry {
		if a.Name() == name {
			return a, true
		}
	}
	return nil, false
}

package launcher

import (
	"strconv"
	"strings"
)

// Ranks on an oversubscribed host, one with more ranks than CPUs, should
// each use as few threads as they can. A Go rank runs up to GOMAXPROCS
// threads at once (the number of CPUs by default), and the hand-offs
// between the goroutines of a collective then wake other threads, each a
// trip through the kernel scheduler that competes with the other ranks for
// the same few cores: at np 4 on 2 CPUs a small AllReduce took 2.5 times
// as long with GOMAXPROCS=2 as with 1
// (docs/measurements.md#gomaxprocs-on-an-oversubscribed-host). So a rank
// started on such a host gets GOMAXPROCS set to its share of the CPUs, at
// least 1, unless the user's environment or -x already sets it. Programs
// that are not Go ignore the variable.

// withThreads returns the environment env of a rank, complete but for
// this, with GOMAXPROCS added when the rank's host (cpus CPUs) holds more
// ranks of the job (HCCL_LOCAL_WORLD_SIZE in env) than CPUs.
func withThreads(env []string, cpus int) []string {
	local := 0
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch name {
		case "GOMAXPROCS":
			return env
		case EnvLocalWorldSize:
			local, _ = strconv.Atoi(value)
		}
	}
	if cpus <= 0 || local <= cpus {
		return env
	}
	return append(env, "GOMAXPROCS="+strconv.Itoa(max(1, cpus/local)))
}

package launcher

import (
	"os"
	"strings"

	"github.com/hcclrun/hcclrun/shm"
)

// Whether ranks of one host hand large payloads over in place (the
// runtime's HCCL_SHM_DIRECT) is for the launcher to decide, once for the
// whole job: the runtime's algorithm selector prices the collectives that
// post in place differently, and every rank must choose alike, so the
// ranks cannot each time the machine for themselves. The launcher times
// it (shm.InPlacePays: a process_vm_readv against a user-space copy; on
// the PVM machine of 2026-12-02 in-place reads lost to the rings, on the
// KVM one they won) and, where in place does not pay and neither the
// user's environment nor -x says otherwise, gives every rank
// HCCL_SHM_DIRECT=0.

// Names of the runtime's in-place knobs (runtime/env.go).
const (
	envShmDirect        = "HCCL_SHM_DIRECT"
	envShmDirectDisable = "HCCL_SHM_DIRECT_DISABLE"
)

// withInPlaceChoice returns the exported variables exports, with
// HCCL_SHM_DIRECT=0 added when reading another process's memory is slow
// on this host and neither exports nor the launcher's environment
// (lookup) sets HCCL_SHM_DIRECT or HCCL_SHM_DIRECT_DISABLE. pays is
// shm.InPlacePays, or a stand-in in tests; it is not called when the
// user has chosen.
func withInPlaceChoice(exports []string, lookup func(string) (string, bool), pays func() bool) []string {
	for _, name := range []string{envShmDirect, envShmDirectDisable} {
		if _, ok := lookup(name); ok {
			return exports
		}
		for _, kv := range exports {
			if strings.HasPrefix(kv, name+"=") {
				return exports
			}
		}
	}
	if pays() {
		return exports
	}
	return append(exports, envShmDirect+"=0")
}

// inPlacePays is shm.InPlacePays, started as a job starts (Job.Run) so
// that its millisecond or two on the PVM machine (faulting its buffers in
// costs most of it) overlaps the launcher's other work.
var inPlacePays = shm.InPlacePays

// inPlaceChoice applies withInPlaceChoice to the job's exports and says
// so in the launcher's debug log.
func (r *resolved) inPlaceChoice() {
	n := len(r.exports)
	r.exports = withInPlaceChoice(r.exports, os.LookupEnv, inPlacePays)
	if len(r.exports) > n {
		copyTime, readTime := shm.InPlaceTimes()
		r.log.Debug("reading another process's memory is slow on this host: ranks get HCCL_SHM_DIRECT=0",
			"copy", copyTime, "process_vm_readv", readTime)
	}
}

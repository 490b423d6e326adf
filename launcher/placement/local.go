package placement

import "runtime"

// LocalhostName is the host of a job started without a hostfile or -H.
// The launcher spawns ranks on it directly, without SSH.
const LocalhostName = "localhost"

// Localhost returns the default when the user names no hosts: this machine,
// with one slot per CPU the process may use (runtime.NumCPU, which honours
// the affinity mask), as mpirun gives one slot per core on a workstation.
func Localhost() []Host {
	return []Host{{Name: LocalhostName, Slots: runtime.NumCPU()}}
}

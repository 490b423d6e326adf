package topo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hcclrun/hcclrun/ranktable"
)

// affinity returns the CPUs the process may run on, as a list like "0-1,4".
func affinity() string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return ""
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return ranktable.FormatCPUList(cpus)
}

// numaNodes reads /sys/devices/system/node/node*/cpulist.
func numaNodes() []NUMANode {
	paths, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*/cpulist")
	var nodes []NUMANode
	for _, p := range paths {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(p)), "node"))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		nodes = append(nodes, NUMANode{ID: id, CPUs: strings.TrimSpace(string(b))})
	}
	return nodes
}

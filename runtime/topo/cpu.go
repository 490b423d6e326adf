package topo

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
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
	return formatCPUList(cpus)
}

// formatCPUList writes sorted CPU numbers as ranges: [0 1 2 4] -> "0-2,4".
func formatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
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

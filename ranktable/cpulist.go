package ranktable

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU bounds CPU numbers in a cpu list. It is Linux's largest NR_CPUS; the
// bound keeps "0-999999999" from allocating a billion ints.
const MaxCPU = 8191

// ParseCPUList parses a Linux cpulist ("0-3,8,10-11", the format of
// /sys/devices/system/cpu/online and taskset -c) into the sorted set of CPU
// numbers it names. Strides ("0-7:2/4") are not supported.
func ParseCPUList(s string) ([]int, error) {
	if s == "" {
		return nil, fmt.Errorf("empty cpu list")
	}
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseCPU(lo, part)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseCPU(hi, part); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("cpu range %q is decreasing", part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

func parseCPU(s, part string) (int, error) {
	n, why := parseDecimal(s)
	if why != "" {
		return 0, fmt.Errorf("cpu %q in %q %s", s, part, why)
	}
	if n > MaxCPU {
		return 0, fmt.Errorf("cpu %d in %q exceeds %d", n, part, MaxCPU)
	}
	return n, nil
}

// FormatCPUList writes cpus in cpulist syntax, collapsing runs into ranges.
// The input need not be sorted; duplicates are dropped. It returns "" for an
// empty set.
func FormatCPUList(cpus []int) string {
	c := slices.Clone(cpus)
	slices.Sort(c)
	c = slices.Compact(c)
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return b.String()
}

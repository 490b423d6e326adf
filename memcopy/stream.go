package memcopy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// streamMin returns the shortest copy that Copy leaves to Go's copy because
// it streams past the cache: a quarter of this CPU's last-level cache, and
// streamFloor at least. The executor's copy of a rank's own block is the
// copy this large (AllGather and AlltoAll out of place).
//
// The two hosts the project has run on disagree on a fixed bound, and a
// quarter of the last-level cache is the rule that agrees with both. On
// the AMD EPYC host (32 MiB of L3, the bound 8 MiB), streaming 8 MiB
// blocks won (the KVM machine of 2026-12-03, np 2, interleaved runs of
// the two builds, medians out of place over six runs): AllGather 16 MiB
// 2324 -> 2160 us, 64 MiB 11113 -> 9632; AlltoAll 16 MiB 2428 -> 2140, 64
// MiB 11152 -> 9738; a bound of 1 MiB did as well at 16 and 64 MiB and
// worse at AllGather 4 MiB (285 -> 321 us). On the Intel host (480 MiB of
// L3 as the VM sees it, the bound 120 MiB), REP MOVSB won (2026-12-05,
// np 2, 16 MiB, `-n 150 -w 10`, five interleaved runs, out of place, us):
// AllGather 1371-1561 -> 1254-1473, AlltoAll 1480-2131 -> 1417-1604
// (Open MPI 1414-1676 and 1438-1581); at 64 MiB, three runs, AllGather
// 12.8-13.4 -> 12.2-12.5 ms. On that host the evening before, with the
// machine quieter, the two measured alike at 16 MiB.
func streamMin() int {
	stream.once.Do(func() { stream.min = streamBound(lastLevelCache(cacheDir)) })
	return stream.min
}

var stream struct {
	once sync.Once
	min  int
}

// streamFloor is the smallest streamMin: below it a block is better copied
// through the cache on every host measured.
const streamFloor = 8 << 20

// cacheDir is where Linux lists the caches of CPU 0.
const cacheDir = "/sys/devices/system/cpu/cpu0/cache"

// streamBound is streamMin for a last-level cache of llc bytes (0:
// unknown).
func streamBound(llc int64) int {
	return int(max(llc/4, streamFloor))
}

// lastLevelCache returns the size in bytes of the highest-level data or
// unified cache that dir (sysfs's cpuN/cache) lists, or 0 when it lists
// none.
func lastLevelCache(dir string) int64 {
	entries, _ := filepath.Glob(filepath.Join(dir, "index*"))
	var level, size int64
	for _, e := range entries {
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(e, name))
			return strings.TrimSpace(string(b))
		}
		if read("type") == "Instruction" {
			continue
		}
		l, err := strconv.ParseInt(read("level"), 10, 64)
		if err != nil {
			continue
		}
		n := parseCacheSize(read("size"))
		if n > 0 && (l > level || l == level && n > size) {
			level, size = l, n
		}
	}
	return size
}

// parseCacheSize reads sysfs's cache sizes ("48K", "2048K", "32M"), 0 if
// it cannot.
func parseCacheSize(s string) int64 {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * mult
}

package cpu

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
// copy this large (AllGather and AlltoAll out of place). A fixed bound
// lost on one of the hosts measured; a quarter of the last-level cache won
// on both (docs/measurements.md#copies).
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

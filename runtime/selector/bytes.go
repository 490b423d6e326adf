package selector

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseBytes parses a size such as "8", "64K", "1M", "1MiB", "2G", "1T" or
// "1.5k" (binary multiples, case-insensitive, an optional "B" or "iB"
// suffix, spaces around the number). It is the one parser of byte counts:
// HCCL_* variables, tuning files, hcclrun plan and bench's -b, -e and -i.
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:len(t)-1]
		}
	}
	t = strings.TrimSpace(t)
	if t == "" {
		return 0, fmt.Errorf("size %q: no number", s)
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n < 0 || n > (1<<62)/mult {
			return 0, fmt.Errorf("size %q out of range", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*float64(mult) > 1<<62 || f != f {
		return 0, fmt.Errorf("size %q: want a non-negative byte count such as 8, 64K, 16M or 1G", s)
	}
	return int64(f * float64(mult)), nil
}

// DefaultBuffSize is the staging per link when HCCL_BUFFSIZE is unset:
// the shm links' ring (shmlink.DefaultRingBytes, which a runtime test
// holds equal).
const DefaultBuffSize = 4 << 20

// Bounds of HCCL_BUFFSIZE, in bytes: a ring holds a few frames at least,
// and at most what the shm links take (a larger one buys no bandwidth).
const (
	MinBuffSize = 4 << 10
	MaxBuffSize = 1 << 30
)

// ParseBuffSize reads HCCL_BUFFSIZE: a bare number is MB, as HCCL reads
// it (HCCL_BUFFSIZE=200 is 200 MiB), and a number with a unit is bytes in
// ParseBytes's grammar (4M, 64K, 65536B), from MinBuffSize to
// MaxBuffSize either way. Errors name the variable.
func ParseBuffSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	bare := t != "" && strings.Trim(t, "0123456789.") == ""
	if bare {
		t += "M"
	}
	n, err := ParseBytes(t)
	switch {
	case err != nil:
		return 0, fmt.Errorf("HCCL_BUFFSIZE=%q: want a number of MB as in HCCL (e.g. 200), or bytes with a unit (e.g. 4M, 64K, 65536B)", s)
	case bare && (n < MinBuffSize || n > MaxBuffSize):
		return 0, fmt.Errorf("HCCL_BUFFSIZE=%q: a bare number is MB, as in HCCL: want 1 to 1024 (MB); for a byte count add a unit (e.g. %sB)", s, t[:len(t)-1])
	case n < MinBuffSize || n > MaxBuffSize:
		return 0, fmt.Errorf("HCCL_BUFFSIZE=%q: want 4K to 1G bytes (or a bare number of MB, 1 to 1024)", s)
	}
	return n, nil
}

// FormatBytes prints a size with a binary unit when it is a whole multiple.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		s string
		m int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return fmt.Sprintf("%d %s", n/u.m, u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}

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

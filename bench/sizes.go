package bench

import (
	"fmt"
	"strconv"
)

// maxSweepSizes bounds the size list, so that -i 1 -e 1G fails at once
// instead of planning a billion rows.
const maxSweepSizes = 4096

// FormatSize prints a byte count the short way the tables and plots use:
// 8, 64K, 16M, 1G when it is an exact multiple, the plain number otherwise.
// Sizes are read by selector.ParseBytes, the one parser of byte counts in
// flags, environment variables and tuning files.
func FormatSize(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dG", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dM", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dK", b>>10)
	}
	return strconv.FormatInt(b, 10)
}

// Sizes lists the sweep from min to max inclusive: times factor when factor
// > 1, else plus step, as nccl-tests' -f and -i do. A zero minimum is
// measured once and the sweep then goes on from 1 byte (times factor) or
// from step (plus step), where nccl-tests would loop for ever.
func Sizes(min, max int64, factor int, step int64) ([]int64, error) {
	switch {
	case min < 0 || max < 0:
		return nil, fmt.Errorf("sizes must not be negative (min %d, max %d)", min, max)
	case max < min:
		return nil, fmt.Errorf("max size %d is below min size %d", max, min)
	case factor < 1:
		return nil, fmt.Errorf("step factor must be at least 1, got %d", factor)
	case factor == 1 && step < 1:
		return nil, fmt.Errorf("step bytes must be at least 1 without a step factor, got %d", step)
	}
	var out []int64
	for s := min; s <= max; {
		if len(out) == maxSweepSizes {
			return nil, fmt.Errorf("the sweep from %d to %d has more than %d sizes", min, max, maxSweepSizes)
		}
		out = append(out, s)
		// Stop before the step could overflow: the next size would be
		// beyond max anyway.
		switch {
		case factor > 1 && s == 0:
			s = 1
		case factor > 1 && s <= max/int64(factor):
			s *= int64(factor)
		case factor == 1 && s <= max-step:
			s += step
		default:
			return out, nil
		}
	}
	return out, nil
}

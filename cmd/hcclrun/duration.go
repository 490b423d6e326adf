package main

import (
	"fmt"
	"strconv"
	"time"
)

// durationValue is a flag value for --timeout and --grace: a Go duration
// ("90s", "1m30s") or, as mpirun's --timeout takes, a bare number of seconds
// ("90", "2.5"). Negative values are refused.
type durationValue struct{ d time.Duration }

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return fmt.Errorf("%q is not a duration (e.g. 30s, 5m, or a number of seconds)", s)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	v.d = d
	return nil
}

func (v *durationValue) String() string {
	if v == nil || v.d == 0 {
		return ""
	}
	return v.d.String()
}

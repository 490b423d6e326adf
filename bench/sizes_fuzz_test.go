package bench

import (
	"testing"

	"github.com/hcclrun/hcclrun/runtime/selector"
)

// FuzzParseSize: any input the flags' parser (selector.ParseBytes) takes
// gives a non-negative count that FormatSize prints back to the same count.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8", "64K", "16M", "1G", "1MiB", "2MB", " 4k ", "0", "-1", "9223372036854775807", "1T", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := selector.ParseBytes(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("ParseBytes(%q) = %d", s, v)
		}
		back, err := selector.ParseBytes(FormatSize(v))
		if err != nil || back != v {
			t.Fatalf("ParseBytes(FormatSize(%d) = %q) = %d, %v", v, FormatSize(v), back, err)
		}
	})
}

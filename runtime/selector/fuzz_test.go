package selector

import (
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/algo"
)

// The parsers read user input (HCCL_ALGO, tuning files, sizes on the command
// line): they must never panic, and what they accept must mean the same
// thing when printed and parsed again. Seeds live in testdata/fuzz.

func FuzzParseAlgo(f *testing.F) {
	f.Add("allreduce:rhd;allgather:pat")
	f.Add("level0:NA;level1:H-D_R")
	f.Add("allreduce=level0:NA;level1:ring/allgather=level0:NA;level1:H-D_R")
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := ParseAlgo(spec)
		if err != nil {
			return
		}
		q, err := ParseAlgo(p.String())
		if err != nil {
			t.Fatalf("accepted %q but not its own print %q: %v", spec, p.String(), err)
		}
		for _, c := range collectives {
			for _, a := range algo.All() {
				for servers := 1; servers <= 2; servers++ {
					x, _ := p.allows(c, servers, a.Name())
					y, _ := q.allows(c, servers, a.Name())
					if x != y {
						t.Fatalf("%q and its print disagree on %s/%s on %d servers", spec, c, a.Name(), servers)
					}
				}
			}
		}
	})
}

func FuzzParseTuning(f *testing.F) {
	f.Add("shm.alpha 2us\nsegment.min 4K\n")
	f.Add("slow.wake 7us\nslow.poll.max 32K\npost.min 256K\n")
	f.Add(defaultTuning)
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseTuning(strings.NewReader(in), DefaultModel())
		if err != nil {
			return
		}
		if m.MinSegment < 1 || m.MinSegment > m.MaxSegment || m.MaxChannels < 1 {
			t.Fatalf("accepted %q giving an unusable model %+v", in, m)
		}
	})
}

func FuzzParseBytes(f *testing.F) {
	f.Add("1MiB")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d", s, n)
		}
		back, err := ParseBytes(FormatBytes(n))
		if err != nil || back != n {
			t.Fatalf("FormatBytes(%d) = %q parses to %d, %v", n, FormatBytes(n), back, err)
		}
	})
}

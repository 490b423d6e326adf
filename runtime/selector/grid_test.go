package selector

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/algo"
)

// gridSizes are the call sizes of the grid: 0, the powers of two up to
// 256 MiB and three times each power up to 192 MiB (chunks that do not
// divide evenly).
func gridSizes() []int64 {
	sizes := []int64{0}
	for k := 0; k <= 28; k++ {
		sizes = append(sizes, 1<<k)
		if k <= 26 {
			sizes = append(sizes, 3<<k)
		}
	}
	slices.Sort(sizes)
	return sizes
}

// gridTopos are np 1 to 9 on 1 to 3 servers.
func gridTopos() []Topo {
	var ts []Topo
	for n := 1; n <= 9; n++ {
		for s := 1; s <= min(n, 3); s++ {
			ts = append(ts, Topo{Ranks: n, Servers: s})
		}
	}
	return ts
}

// gridModels are the models the grid prices with: the default on 2
// cores, with a core per rank, over TCP alone, on a slow host, and with
// nothing posted in place.
func gridModels() []struct {
	name string
	m    Model
} {
	def := DefaultModel()
	def.Cores = 2 // the golden file must not depend on the machine's cores
	perRank := def
	perRank.Cores = 0
	slow := def.WithHandoff(def.Slow.Handoff * 2)
	copied := def
	copied.Posted = 0
	return []struct {
		name string
		m    Model
	}{
		{"default, 2 cores", def},
		{"a core per rank", perRank},
		{"tcp only", def.WithoutShm()},
		{"slow host", slow},
		{"nothing posted", copied},
	}
}

// writeShape hashes the fields of a shape that pricing reads.
func writeShape(h hash.Hash, s shape, err error) {
	if err != nil {
		fmt.Fprintf(h, "err %v\n", err)
		return
	}
	fmt.Fprintf(h, "%v %v %v %v %v %v %v %v %v %v %v %v %v %v %v %v\n", s.lat, s.bytes, s.reduce, s.copy, s.local, s.msgs,
		s.handoffs, s.maxOp, s.heads, s.exchBytes, s.fromSend, s.coll, s.size, s.fused, s.busy, s.ringsBusy)
}

// TestChoicesGrid pins every choice of the selector over a grid (each
// collective, np 1 to 9 on 1 to 3 servers, sizes 0 to 256 MiB) under a
// few models, and hashes every candidate's estimate and every
// algorithm's shape over the same grid: a change of the cost code that
// is meant to move nothing (a refactoring) must leave the file as it
// is. The choices are listed by runs of sizes, to read what moved.
func TestChoicesGrid(t *testing.T) {
	sizes, topos := gridSizes(), gridTopos()
	var b strings.Builder
	b.WriteString("# The selector's choice per collective and job over sizes 0 to 256 MiB (TestChoicesGrid).\n")
	for _, gm := range gridModels() {
		fmt.Fprintf(&b, "\n## %s\n", gm.name)
		h := sha256.New()
		for _, coll := range collectives {
			for _, topo := range topos {
				var runs []string
				var last string
				var from int64
				flush := func(to int64) {
					if last == "" {
						return
					}
					span := FormatBytes(from)
					if to != from {
						span += "-" + FormatBytes(to)
					}
					runs = append(runs, span+" "+last)
				}
				prev := int64(0)
				for _, size := range sizes {
					tab := Predict(gm.m, Policy{}, Call{coll, size, topo})
					for _, e := range tab.Candidates {
						fmt.Fprintf(h, "%s %d %d %v %d %d %v\n", coll, topo.Ranks, topo.Servers, size, e.Channels, e.Segment, e.Time)
						fmt.Fprintf(h, "%s %v %v\n", e.Algo, e.Err, e.Excluded)
					}
					got := "-"
					if e, err := tab.Chosen(); err == nil {
						got = e.Algo
					} else {
						got = "(" + err.Error() + ")"
					}
					if got != last {
						flush(prev)
						last, from = got, size
					}
					prev = size
				}
				flush(prev)
				fmt.Fprintf(&b, "%s np %d on %d: %s\n", strings.ToLower(coll.String()), topo.Ranks, topo.Servers, strings.Join(runs, ", "))
			}
		}
		fmt.Fprintf(&b, "estimates sha256 %x\n", h.Sum(nil))
	}
	h := sha256.New()
	for _, a := range algo.All() {
		for _, coll := range collectives {
			for _, topo := range topos {
				for _, size := range sizes {
					s, err := shapeOf(a.Name(), coll, topo, size)
					fmt.Fprintf(h, "%s %s %d %d %d: ", a.Name(), coll, topo.Ranks, topo.Servers, size)
					writeShape(h, s, err)
				}
			}
		}
	}
	fmt.Fprintf(&b, "\nshapes sha256 %x\n", h.Sum(nil))

	path := filepath.Join("testdata", "choices.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update)", err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		n := 0
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w && n < 20 {
				t.Errorf("line %d:\n got %s\nwant %s", i+1, g, w)
				n++
			}
		}
		t.Errorf("choices differ from %s", path)
	}
}

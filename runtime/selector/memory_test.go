package selector

import (
	"math"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

func TestMemorySlowdown(t *testing.T) {
	m := Model{CacheBytes: 1 << 20, MemBytes: 16 << 20, MemSlowdown: 4}
	two := Topo{Ranks: 2, Servers: 1}
	for _, tt := range []struct {
		topo Topo
		size float64
		want float64
	}{
		{two, 0, 1},
		{two, 256 << 10, 1}, // 512 KiB working set
		{two, 512 << 10, 1}, // at CacheBytes
		{two, 2 << 20, 2},   // 4 MiB: two of the four doublings to MemBytes
		{two, 8 << 20, 4},   // at MemBytes
		{two, 1 << 30, 4},
		{Topo{Ranks: 8, Servers: 4}, 2 << 20, 2}, // two ranks a server
		{Topo{Ranks: 8, Servers: 1}, 512 << 10, 2},
	} {
		if got := m.memory(tt.topo, tt.size); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("memory(%+v, %v) = %v, want %v", tt.topo, tt.size, got, tt.want)
		}
	}
	for _, off := range []Model{{}, {CacheBytes: 1 << 20, MemBytes: 16 << 20, MemSlowdown: 1}, {CacheBytes: 16 << 20, MemBytes: 1 << 20, MemSlowdown: 4}} {
		if got := off.memory(two, 1<<30); got != 1 {
			t.Errorf("%+v: memory = %v, want 1 (no slowdown configured)", off, got)
		}
	}
}

// TestMemoryScalesByteWork checks that the slowdown multiplies the byte
// terms and nothing else: a 64 MiB ring AllReduce at np 2 (latency
// negligible) costs MemSlowdown times as much, an 8-byte one the same.
func TestMemoryScalesByteWork(t *testing.T) {
	base := DefaultModel()
	base.Cores = 2
	flat := base
	flat.MemSlowdown = 1
	price := func(m Model, bytes int64) float64 {
		e := m.estimate("ring", Call{Coll: plan.AllReduce, Bytes: bytes, Topo: Topo{Ranks: 2, Servers: 1}})
		if e.Err != nil {
			t.Fatal(e.Err)
		}
		return float64(e.Time)
	}
	if r := price(base, 64<<20) / price(flat, 64<<20); math.Abs(r-base.MemSlowdown) > 0.01 {
		t.Errorf("64 MiB: slowed down %.3fx, want %v", r, base.MemSlowdown)
	}
	if a, b := price(base, 8), price(flat, 8); a != b {
		t.Errorf("8 B: %v with the slowdown, %v without", a, b)
	}
}

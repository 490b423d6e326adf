package runtime

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
)

// TestShmDirectKnob: by default the collectives whose receivers only copy
// (AllGather, Broadcast) post in place and the reductions do not,
// HCCL_SHM_DIRECT=1 makes every one post, =0 none, and
// HCCL_SHM_DIRECT_DISABLE=1 wins over HCCL_SHM_DIRECT.
func TestShmDirectKnob(t *testing.T) {
	for _, tt := range []struct {
		env               map[string]string
		copies, allReduce bool
	}{
		{map[string]string{}, true, false},
		{map[string]string{"HCCL_SHM_DIRECT": "1"}, true, true},
		{map[string]string{"HCCL_SHM_DIRECT": "0"}, false, false},
		{map[string]string{"HCCL_SHM_DIRECT_DISABLE": "1"}, false, false},
		{map[string]string{"HCCL_SHM_DIRECT": "1", "HCCL_SHM_DIRECT_DISABLE": "1"}, false, false},
	} {
		k, err := knobsFromEnv(func(name string) string { return tt.env[name] })
		if err != nil {
			t.Fatalf("%v: %v", tt.env, err)
		}
		m := k.shmDirect()
		for _, c := range []plan.Coll{plan.AllGather, plan.Broadcast} {
			if got := m.posts(c); got != tt.copies {
				t.Errorf("%v: %v posts in place %v, want %v", tt.env, c, got, tt.copies)
			}
		}
		if got := m.posts(plan.AllReduce); got != tt.allReduce {
			t.Errorf("%v: AllReduce posts in place %v, want %v", tt.env, got, tt.allReduce)
		}
	}
	if _, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_DIRECT": "yes"}[name] }); err == nil {
		t.Error("HCCL_SHM_DIRECT=yes accepted")
	}
}

// TestShmSpliceKnob: HCCL_SHM_SPLICE_DISABLE=1 turns the pipes off, =0
// on, and unset leaves them to the probe.
func TestShmSpliceKnob(t *testing.T) {
	for v, want := range map[string]spliceMode{"": spliceProbed, "0": spliceOn, "1": spliceOff} {
		k, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_SPLICE_DISABLE": v}[name] })
		if err != nil || k.ShmSplice != want {
			t.Errorf("HCCL_SHM_SPLICE_DISABLE=%q: %v, %v; want %v", v, k.ShmSplice, err, want)
		}
	}
	if _, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_SHM_SPLICE_DISABLE": "yes"}[name] }); err == nil {
		t.Error("HCCL_SHM_SPLICE_DISABLE=yes accepted")
	}
}

// TestPipesOff: the knob decides when set, and nothing is probed where
// nothing is read in place or the host is crowded.
func TestPipesOff(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		k       tunables
		local   int
		crowded bool
		want    bool
	}{
		{tunables{ShmSplice: spliceOff}, 2, false, true},
		{tunables{ShmSplice: spliceOn}, 2, false, false},
		{tunables{ShmSplice: spliceOn}, 256, true, false},
		{tunables{ShmDisable: true}, 2, false, true},
		{tunables{ShmDirect: directNone}, 2, false, true},
		{tunables{}, 1, false, true},
		{tunables{}, 256, true, true},
	} {
		if got := pipesOff(c.k, c.local, c.crowded, log); got != c.want {
			t.Errorf("%+v with %d local ranks: pipes off %v, want %v", c.k, c.local, got, c.want)
		}
	}
}

// TestBuffSizeKnob: a bare HCCL_BUFFSIZE is MB, as in HCCL; with a unit it
// is bytes; out of range or malformed it is an error that says which.
func TestBuffSizeKnob(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want int
		err  string
	}{
		{"200", 200 << 20, ""},
		{" 1 ", 1 << 20, ""},
		{"1024", 1 << 30, ""},
		{"0.5", 512 << 10, ""},
		{"4M", 4 << 20, ""},
		{"64K", 64 << 10, ""},
		{"65536B", 65536, ""},
		{"4096b", 4096, ""},
		{"1G", 1 << 30, ""},
		{"4194304", 0, "a bare number is MB, as in HCCL: want 1 to 1024 (MB); for a byte count add a unit (e.g. 4194304B)"},
		{"0", 0, "a bare number is MB"},
		{"2048", 0, "a bare number is MB"},
		{"100B", 0, "want 4K to 1G bytes"},
		{"2G", 0, "want 4K to 1G bytes"},
		{"lots", 0, "want a number of MB as in HCCL (e.g. 200), or bytes with a unit"},
		{"-1", 0, "want a number of MB"},
	} {
		k, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_BUFFSIZE": tt.env}[name] })
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "HCCL_BUFFSIZE") {
				t.Errorf("HCCL_BUFFSIZE=%q: %v, want an error containing %q", tt.env, err, tt.err)
			}
		case err != nil || k.BuffSize != tt.want:
			t.Errorf("HCCL_BUFFSIZE=%q: %d, %v; want %d", tt.env, k.BuffSize, err, tt.want)
		}
	}
}

// TestGraphFuseBytesKnob: HCCL_GRAPH_FUSE_BYTES is bytes, bare or with a
// unit; 0 turns fusion off (the knob's -1); anything else is an error
// naming the variable.
func TestGraphFuseBytesKnob(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want int
		ok   bool
	}{
		{"1048576", 1 << 20, true}, {"25M", 25 << 20, true}, {"64KiB", 64 << 10, true},
		{"0", -1, true}, {"-1", 0, false}, {"lots", 0, false}, {"2T", 0, false},
	} {
		k, err := knobsFromEnv(func(name string) string { return map[string]string{"HCCL_GRAPH_FUSE_BYTES": tt.env}[name] })
		switch {
		case !tt.ok:
			if err == nil || !strings.Contains(err.Error(), "HCCL_GRAPH_FUSE_BYTES") {
				t.Errorf("HCCL_GRAPH_FUSE_BYTES=%q: %d, %v; want an error naming the variable", tt.env, k.GraphFuseBytes, err)
			}
		case err != nil || k.GraphFuseBytes != tt.want:
			t.Errorf("HCCL_GRAPH_FUSE_BYTES=%q: %d, %v; want %d", tt.env, k.GraphFuseBytes, err, tt.want)
		}
	}
}

// TestScratchLimit: a plan's scratch is bounded by HCCL_BUFFSIZE, in
// elements, or by the shm links' default ring when it is unset, which is
// what the selector prices with unset.
func TestScratchLimit(t *testing.T) {
	if selector.DefaultBuffSize != shmlink.DefaultRingBytes {
		t.Errorf("selector.DefaultBuffSize %d, shmlink.DefaultRingBytes %d: the selector prices another default buffer", selector.DefaultBuffSize, shmlink.DefaultRingBytes)
	}
	for _, tt := range []struct {
		buff, elem, want int
	}{{0, 4, 1 << 20}, {4096, 8, 512}, {200 << 20, 2, 100 << 20}} {
		if got := scratchLimit(tunables{BuffSize: tt.buff}, tt.elem); got != tt.want {
			t.Errorf("HCCL_BUFFSIZE %d, %d-byte elements: limit %d, want %d", tt.buff, tt.elem, got, tt.want)
		}
	}
}

package selector

import (
	"bytes"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func TestChannels(t *testing.T) {
	m := DefaultModel()
	m.MaxChannels, m.MinChannelBytes, m.MaxChannelCall = 4, 1000, 0
	for _, tt := range []struct {
		bytes int64
		want  int
	}{{0, 1}, {1999, 1}, {2000, 2}, {3999, 3}, {4000, 4}, {1 << 40, 4}} {
		if got := m.channels(tt.bytes); got != tt.want {
			t.Errorf("channels(%d) = %d, want %d", tt.bytes, got, tt.want)
		}
	}
	m.MaxChannelCall = 1 << 20
	if got := m.channels(1<<20 + 1); got != 1 {
		t.Errorf("channels beyond MaxChannelCall = %d, want 1", got)
	}
}

// TestChannelsFor: the default gives two channels to calls of 16 to 32
// MiB that cross servers or go over TCP, one to calls within a server
// over shm and to the collectives the runtime does not split; the job's
// bounds override the rule, but no channel gets less than 8 bytes.
func TestChannelsFor(t *testing.T) {
	def := DefaultModel()
	floor := def
	floor.ChannelFloor = 4
	ceil := def
	ceil.ChannelCeil = 1
	for _, tt := range []struct {
		name string
		m    Model
		call Call
		want int
	}{
		{"tcp across servers, 16 MiB", def, Call{plan.AllReduce, 16 << 20, Topo{Ranks: 3, Servers: 3}}, 2},
		{"tcp across servers, 32 MiB", def, Call{plan.Broadcast, 32 << 20, Topo{Ranks: 3, Servers: 3}}, 2},
		{"tcp across servers, 8 MiB", def, Call{plan.AllReduce, 8 << 20, Topo{Ranks: 3, Servers: 3}}, 1},
		{"tcp across servers, 64 MiB", def, Call{plan.AllReduce, 64 << 20, Topo{Ranks: 3, Servers: 3}}, 1},
		{"shm, 16 MiB", def, Call{plan.AllReduce, 16 << 20, Topo{Ranks: 4, Servers: 1}}, 1},
		{"tcp within a server, 16 MiB", def.WithoutShm(), Call{plan.Reduce, 16 << 20, Topo{Ranks: 2, Servers: 1}}, 2},
		{"allgather", def, Call{plan.AllGather, 16 << 20, Topo{Ranks: 3, Servers: 3}}, 1},
		{"floor", floor, Call{plan.AllReduce, 1 << 10, Topo{Ranks: 4, Servers: 1}}, 4},
		{"floor, 3 elements of 8 bytes", floor, Call{plan.AllReduce, 24, Topo{Ranks: 4, Servers: 1}}, 3},
		{"floor, no element", floor, Call{plan.AllReduce, 0, Topo{Ranks: 4, Servers: 1}}, 1},
		{"floor, allgather", floor, Call{plan.AllGather, 1 << 20, Topo{Ranks: 4, Servers: 1}}, 1},
		{"ceiling", ceil, Call{plan.AllReduce, 16 << 20, Topo{Ranks: 3, Servers: 3}}, 1},
	} {
		s, err := shapeOf("ring", tt.call.Coll, tt.call.Topo, tt.call.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if got := tt.m.channelsFor(tt.call, s); got != tt.want {
			t.Errorf("%s: %v gets %d channels, want %d", tt.name, tt.call, got, tt.want)
		}
	}
}

func TestSegment(t *testing.T) {
	m := DefaultModel()
	m.MinSegment, m.MaxSegment = 4096, 1<<20
	for _, tt := range []struct {
		op   float64
		want int64
	}{{0, 4096}, {100, 4096}, {64 << 10, 16 << 10}, {65<<10 + 1, 32 << 10}, {1 << 30, 1 << 20}} {
		if got := m.segment(tt.op); got != tt.want {
			t.Errorf("segment(%v) = %d, want %d", tt.op, got, tt.want)
		}
	}
}

// TestChoices checks the model's choices where the answer is not in doubt:
// latency-bound calls go to few-round algorithms, large ones on many ranks
// not to the one-shot that sends n times the data.
func TestChoices(t *testing.T) {
	tests := []struct {
		call  Call
		want  []string // any of
		avoid string
	}{
		{Call{plan.AllReduce, 8, Topo{Ranks: 8, Servers: 1}}, []string{"oneshot", "mesh"}, ""},
		{Call{plan.AllReduce, 256 << 20, Topo{Ranks: 8, Servers: 1}}, []string{"ring", "rhd", "mesh"}, "oneshot"},
		{Call{plan.AllReduce, 8, Topo{Ranks: 1024, Servers: 128}}, []string{"rhd"}, "ring"},
		{Call{plan.AllGather, 1 << 10, Topo{Ranks: 1000, Servers: 1000}}, []string{"pat", "rhd"}, "ring"},
		{Call{plan.Broadcast, 8, Topo{Ranks: 64, Servers: 8}}, []string{"tree"}, "ring"},
		{Call{plan.Barrier, 0, Topo{Ranks: 64, Servers: 8}}, []string{"dissemination"}, ""},
		{Call{plan.AlltoAll, 1 << 20, Topo{Ranks: 64, Servers: 8}}, []string{"pairwise"}, "ring"},
	}
	m := DefaultModel()
	m.Cores = 0 // a core per rank: the choices must not depend on this machine
	s := New(m, Policy{}, nil)
	for _, tt := range tests {
		c, err := s.Choose(tt.call)
		if err != nil {
			t.Errorf("%s: %v", tt.call, err)
			continue
		}
		ok := false
		for _, w := range tt.want {
			ok = ok || c.Algo.Name() == w
		}
		if !ok || c.Algo.Name() == tt.avoid {
			t.Errorf("%s: chose %s, want one of %v", tt.call, c.Algo.Name(), tt.want)
		}
	}
}

// TestScale prices every collective at MaxRanks: the CLI promises a table
// for any job without launching anything, so it must be fast.
func TestScale(t *testing.T) {
	start := time.Now()
	for _, coll := range collectives {
		for _, servers := range []int{1, 8192, MaxRanks} {
			tab := Predict(DefaultModel(), Policy{}, Call{coll, 1 << 20, Topo{Ranks: MaxRanks, Servers: servers}})
			if _, err := tab.Chosen(); err != nil {
				t.Errorf("%s at %d servers: %v", coll, servers, err)
			}
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("pricing 24 calls at %d ranks took %v", MaxRanks, d)
	}
	if tab := Predict(DefaultModel(), Policy{}, Call{plan.AllReduce, 1, Topo{Ranks: MaxRanks + 1, Servers: 1}}); tab.Err == nil {
		t.Error("priced a job beyond MaxRanks")
	}
}

func TestSelectorCachesAndLogs(t *testing.T) {
	var buf bytes.Buffer
	s := New(DefaultModel(), Policy{}, slog.New(slog.NewTextHandler(&buf, nil)))
	call := Call{plan.AllReduce, 1 << 20, Topo{Ranks: 16, Servers: 2}}
	a, err := s.Choose(call)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.Choose(call)
	if a != b {
		t.Errorf("cached choice %+v differs from %+v", b, a)
	}
	if n := strings.Count(buf.String(), "algorithm chosen"); n != 1 {
		t.Errorf("%d log lines for one distinct decision:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "algo="+a.Algo.Name()) || !strings.Contains(buf.String(), "predicted=") {
		t.Errorf("log line lacks the choice or its cost: %s", buf.String())
	}
}

// TestTableGolden pins the printed table the CLI shows.
func TestTableGolden(t *testing.T) {
	p, err := ParseAlgo("^oneshot")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range []Call{
		{plan.AllReduce, 1 << 20, Topo{Ranks: 64, Servers: 8}},
		{plan.AllReduce, 4 << 10, Topo{Ranks: 8, Servers: 1}},
		{plan.AllGather, 64 << 10, Topo{Ranks: 1024, Servers: 1024}},
	} {
		m := DefaultModel()
		m.Cores = 2 // the golden file must not depend on the machine's cores
		b.WriteString(Predict(m, p, c).String())
	}
	path := filepath.Join("testdata", "table.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update)", err)
	}
	if b.String() != string(want) {
		t.Errorf("table differs from %s:\n%s", path, b.String())
	}
}

func TestParseTuning(t *testing.T) {
	in := `# measured on host x
shm.alpha 2us
net.bandwidth 1e9   # 1 GB/s
net.parallel 4
reduce.bandwidth 4e9
channels.max 3
channels.minbytes 1M
segment.max 1M
handoff 7us
poll.max 64K
wake 40us
cores 3
cache.bytes 2M
memory.bytes 64M
memory.slowdown 2.5
exchange.slowdown 1.3
shm.head.bandwidth 5e9
net.wake.others 0.25
net.fanout.slowdown 3
net.fanout.bytes 256K
`
	m, err := ParseTuning(strings.NewReader(in), DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultModel()
	if m.Links[Shm].Alpha != 2*time.Microsecond || m.Links[Net].Beta != 1e-9 || m.Links[Net].Parallel != 4 ||
		m.Gamma != 1/4e9 || m.MaxChannels != 3 || m.MinChannelBytes != 1<<20 || m.MaxSegment != 1<<20 ||
		m.Links[Net].Alpha != d.Links[Net].Alpha || m.Copy != d.Copy ||
		m.Handoff != 7*time.Microsecond || m.PollMax != 64<<10 || m.Wake != 40*time.Microsecond || m.Cores != 3 ||
		m.CacheBytes != 2<<20 || m.MemBytes != 64<<20 || m.MemSlowdown != 2.5 || m.Exchange != 1.3 || m.Head != 1/5e9 ||
		m.NetWakeOthers != 0.25 || m.FanOut != 3 || m.FanOutMin != 256<<10 {
		t.Errorf("parsed %+v", m)
	}
	for _, bad := range []struct{ in, want string }{
		{"shm.alpha", `line 1: want "key value"`},
		{"\nshm.alpha fast", "line 2: shm.alpha: bad duration"},
		{"net.bandwidth 0", "bad bandwidth"},
		{"ib.alpha 1us", "unknown setting"},
		{"segment.min 2M", "above segment.max"},
		{"channels.max 0", "bad count"},
		{"cores -1", "bad core count"},
		{"wake soon", "bad duration"},
		{"memory.slowdown 0.5", "bad slowdown"},
		{"exchange.slowdown 0.9", "bad slowdown"},
		{"memory.bytes lots", "memory.bytes"},
		{"net.head.bandwidth 1e9", "unknown setting"},
		{"net.wake.others 2", "bad share"},
		{"shm.wake.others 0.5", "unknown setting"},
		{"net.fanout.slowdown 0", "bad slowdown"},
		{"shm.fanout.bytes 1M", "unknown setting"},
	} {
		if _, err := ParseTuning(strings.NewReader(bad.in), DefaultModel()); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseTuning(%q) = %v, want %q", bad.in, err, bad.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"8", 8, true}, {"1K", 1024, true}, {"1M", 1 << 20, true}, {"1MiB", 1 << 20, true}, {"2gb", 2 << 30, true},
		{"1.5k", 1536, true}, {"64 B", 64, true}, {"", 0, false}, {"K", 0, false}, {"-1", 0, false}, {"1X", 0, false},
		{"9999999999T", 0, false}, {"NaN", 0, false},
	} {
		got, err := ParseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v", tt.in, got, err)
		}
	}
}

func TestSettingsModel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tuning")
	if err := os.WriteFile(path, []byte("net.alpha 7us\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, p, err := Settings{Algo: "allreduce:rhd", TuningFile: path}.Model()
	if err != nil || m.Links[Net].Alpha != 7*time.Microsecond || !p.Forced(plan.AllReduce) || p.Forced(plan.AllGather) {
		t.Errorf("Settings.Model = %+v, %v, %v", m.Links[Net], p, err)
	}
	if _, _, err := (Settings{Algo: "bogus", TuningFile: path}).Model(); err == nil || !strings.Contains(err.Error(), "HCCL_ALGO") {
		t.Errorf("HCCL_ALGO=bogus: %v", err)
	}
	if _, _, err := (Settings{TuningFile: filepath.Join(dir, "missing")}).Model(); err == nil || !strings.Contains(err.Error(), "HCCL_TUNING_FILE") {
		t.Errorf("a tuning file that does not exist: %v", err)
	}
}

func mustLayout(t *testing.T, labels ...int) *plan.Layout {
	t.Helper()
	l, err := plan.NewLayout(labels)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestCallFor(t *testing.T) {
	tests := []struct {
		req  plan.Request
		want Call
	}{
		{plan.Request{Coll: plan.AllReduce, Size: 8, Count: 100}, Call{plan.AllReduce, 400, Topo{Ranks: 8, Servers: 1}}},
		{plan.Request{Coll: plan.AllGather, Size: 8, Count: 100, Layout: plan.EvenLayout(8, 4)}, Call{plan.AllGather, 3200, Topo{Ranks: 8, Servers: 2}}},
		{plan.Request{Coll: plan.Broadcast, Size: 3, Count: 1, Layout: plan.SizesLayout(2, 1)}, Call{plan.Broadcast, 4, Topo{Ranks: 3, Servers: 2}}},
		{plan.Request{Coll: plan.AllReduce, Size: 6, Count: 1, Layout: plan.SizesLayout(3, 2, 1)}, Call{plan.AllReduce, 4, Topo{Ranks: 6, Servers: 3, Largest: 3}}},
		{plan.Request{Coll: plan.AllReduce, Size: 6, Count: 1, Layout: plan.SizesLayout(4, 2)}, Call{plan.AllReduce, 4, Topo{Ranks: 6, Servers: 2, Largest: 4}}},
		{plan.Request{Coll: plan.AllReduce, Size: 8, Count: 1, Layout: plan.SizesLayout(3, 3, 2)}, Call{plan.AllReduce, 4, Topo{Ranks: 8, Servers: 3}}},
		{plan.Request{Coll: plan.AllReduce, Size: 4, Count: 1, Layout: mustLayout(t, 0, 1, 0, 1)}, Call{plan.AllReduce, 4, Topo{Ranks: 4, Servers: 2, Scattered: true}}},
		// AlltoAllV: priced by its topology alone, whatever this rank sends (vChoice).
		{plan.Request{Coll: plan.AlltoAllV, Size: 2, SendCounts: []int{3, 5}}, Call{plan.AlltoAllV, 0, Topo{Ranks: 2, Servers: 1}}},
		{plan.Request{Coll: plan.Barrier, Size: 3, Layout: plan.EvenLayout(3, 3)}, Call{plan.Barrier, 0, Topo{Ranks: 3, Servers: 1}}},
	}
	for _, tt := range tests {
		if got := CallFor(tt.req, 4); got != tt.want {
			t.Errorf("CallFor(%+v) = %+v, want %+v", tt.req, got, tt.want)
		}
	}
}

// TestChoicesOversubscribed holds the choices the calibration measured
// clearly (docs/selector.md): with more ranks than cores, a latency-bound
// AllReduce avoids mesh, whose several messages per step each cost a
// thread wake-up (medians at np 3: mesh 249-303 us, rhd 91-94 us).
func TestChoicesOversubscribed(t *testing.T) {
	m := DefaultModel()
	m.Cores = 2
	for _, n := range []int{3, 4} {
		e, err := Predict(m, Policy{}, Call{plan.AllReduce, 8, Topo{Ranks: n, Servers: 1}}).Chosen()
		if err != nil {
			t.Fatal(err)
		}
		if e.Algo == "mesh" {
			t.Errorf("np %d on 2 cores: chose mesh for 8 B", n)
		}
	}
	// Beyond the cores every byte costs more: the same call is dearer.
	one := Predict(DefaultModel(), Policy{}, Call{plan.AllReduce, 64 << 20, Topo{Ranks: 4, Servers: 1}})
	m.Cores = 4
	other := Predict(m, Policy{}, Call{plan.AllReduce, 64 << 20, Topo{Ranks: 4, Servers: 1}})
	if c := DefaultModel().Cores; c < 4 && one.Candidates[0].Time <= other.Candidates[0].Time {
		t.Errorf("4 ranks on %d cores priced %v, not above 4 cores' %v", c, one.Candidates[0].Time, other.Candidates[0].Time)
	}
}

// TestCrowdedHost: with many ranks per core, algorithms of many messages
// (mesh, one-shot: n-1 per rank) or many rounds (ring) lose to those of
// few (dissemination, rhd, tree), which also open few links; up to
// CrowdFrom ranks per core the crowd term adds nothing, so the choices
// the calibrations were fitted on stay as they were.
func TestCrowdedHost(t *testing.T) {
	m := DefaultModel().WithHandoff(2 * time.Microsecond)
	m.Cores = 2
	few := map[plan.Coll][]string{
		plan.Barrier:   {"dissemination"},
		plan.AllReduce: {"rhd"},
		plan.Broadcast: {"tree"},
		plan.Reduce:    {"tree"},
	}
	for _, n := range []int{32, 64, 256} {
		for coll, want := range few {
			for _, size := range []int64{8, 1 << 20} {
				c := Call{coll, size, Topo{Ranks: n, Servers: 1}}
				e, err := Predict(m, Policy{}, c).Chosen()
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(want, e.Algo) {
					t.Errorf("%s: chose %s, want one of %v\n%s", c, e.Algo, want, Predict(m, Policy{}, c))
				}
			}
		}
	}
	for _, n := range []int{2, 3, 4} {
		for _, name := range []string{"mesh", "ring", "oneshot"} {
			s, err := shapeOf(name, plan.AllReduce, Topo{Ranks: n, Servers: 1}, 64)
			if err != nil {
				t.Fatal(err)
			}
			if f := m.terms(s, Topo{Ranks: n, Servers: 1}, 1); f[fitCrowd] != 0 {
				t.Errorf("np %d on 2 cores, %s: crowd term %v, want 0", n, name, f[fitCrowd])
			}
		}
	}
}

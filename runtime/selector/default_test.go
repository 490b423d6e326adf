package selector

import (
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// TestDefaultModelPinned holds DefaultModel to the constants it had when
// they were written in Go, before they moved to default.tuning: the file
// must price exactly as they did.
func TestDefaultModelPinned(t *testing.T) {
	want := Model{
		Links: [numClasses]LinkCost{
			Shm: {Alpha: 600 * time.Nanosecond, Beta: 1 / 2.75e10, Parallel: 1},
			Net: {Alpha: 10 * time.Microsecond, Beta: 1 / 8.2e9, Parallel: 2},
		},
		Gamma:           1 / 1.85e10,
		Head:            1 / 12e9,
		Copy:            1 / 2.55e10,
		Step:            60 * time.Nanosecond,
		Handoff:         10 * time.Microsecond,
		PollMax:         16 << 10,
		Cores:           goruntime.NumCPU(),
		Wake:            5 * time.Microsecond,
		Slow:            SlowHost{Handoff: 1500 * time.Nanosecond, Wake: 7 * time.Microsecond, PollMax: 32 << 10, NetAlpha: 13 * time.Microsecond},
		Exchange:        1.1,
		Crowd:           1500 * time.Nanosecond,
		CrowdFrom:       2,
		NetWake:         15 * time.Microsecond,
		NetWakeOthers:   0.5,
		FanOut:          2,
		FanOutMin:       128 << 10,
		CacheBytes:      512 << 10,
		MemBytes:        32 << 20,
		MemSlowdown:     3,
		MaxChannels:     2,
		MinChannelBytes: 8 << 20,
		MaxChannelCall:  32 << 20,
		MinSegment:      256 << 10,
		MaxSegment:      1 << 20,
		Posted:          PostedBit(plan.AllGather) | PostedBit(plan.AlltoAll) | PostedBit(plan.AlltoAllV) | PostedBit(plan.Broadcast),
		PostMin:         256 << 10,
	}
	if got := DefaultModel(); got != want {
		t.Errorf("DefaultModel() =\n%+v\nwant\n%+v", got, want)
	}
}

// TestDefaultTuningSources: every setting of default.tuning says where
// its number comes from, in a comment on its line.
func TestDefaultTuningSources(t *testing.T) {
	for i, line := range strings.Split(defaultTuning, "\n") {
		setting, comment, _ := strings.Cut(line, "#")
		if strings.TrimSpace(setting) != "" && strings.TrimSpace(comment) == "" {
			t.Errorf("default.tuning line %d: %q has no source", i+1, line)
		}
	}
}

// TestParseTuningSlowHost: the keys of the slow host's prices and of the
// posted transfers' bound.
func TestParseTuningSlowHost(t *testing.T) {
	in := "slow.handoff 2us\nslow.wake 9us\nslow.poll.max 64K\nslow.net.alpha 20us\npost.min 1M\n"
	m, err := ParseTuning(strings.NewReader(in), DefaultModel())
	if err != nil {
		t.Fatal(err)
	}
	want := SlowHost{Handoff: 2 * time.Microsecond, Wake: 9 * time.Microsecond, PollMax: 64 << 10, NetAlpha: 20 * time.Microsecond}
	if m.Slow != want || m.PostMin != 1<<20 {
		t.Errorf("parsed slow %+v, post.min %d; want %+v and %d", m.Slow, m.PostMin, want, 1<<20)
	}
	for _, bad := range []string{"slow.wake soon", "slow.poll.max lots", "post.min -1", "slow.alpha 1us"} {
		if _, err := ParseTuning(strings.NewReader(bad), DefaultModel()); err == nil {
			t.Errorf("ParseTuning(%q) accepted", bad)
		}
	}
}

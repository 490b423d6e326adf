package selector

import (
	goruntime "runtime"
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
			Shm: {Alpha: 600 * time.Nanosecond, Beta: 1 / 2.75e10, Parallel: 2},
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
		MaxChannels:     1,
		MinChannelBytes: 256 << 10,
		MinSegment:      8 << 10,
		MaxSegment:      512 << 10,
		Posted:          PostedBit(plan.AllGather) | PostedBit(plan.AlltoAll) | PostedBit(plan.AlltoAllV) | PostedBit(plan.Broadcast),
		PostMin:         256 << 10,
	}
	if got := DefaultModel(); got != want {
		t.Errorf("DefaultModel() =\n%+v\nwant\n%+v", got, want)
	}
}

package runtime

import (
	"strings"
	"testing"

	"github.com/hcclrun/hcclrun/runtime/selector"
)

// TestChannelKnobs: HCCL_MIN_NCHANNELS and HCCL_MAX_NCHANNELS, or NCCL's
// spellings where ours are unset, bound the channels; bad values are
// refused naming the variable, alike by the runtime and by
// selector.FromEnv, which price with the same bounds.
func TestChannelKnobs(t *testing.T) {
	for _, tt := range []struct {
		env    map[string]string
		lo, hi int
		bad    string // what the error names
	}{
		{env: map[string]string{}},
		{env: map[string]string{"HCCL_MIN_NCHANNELS": "2"}, lo: 2},
		{env: map[string]string{"HCCL_MAX_NCHANNELS": " 4 "}, hi: 4},
		{env: map[string]string{"NCCL_MIN_NCHANNELS": "3", "NCCL_MAX_NCHANNELS": "16"}, lo: 3, hi: 16},
		{env: map[string]string{"HCCL_MAX_NCHANNELS": "2", "NCCL_MAX_NCHANNELS": "8"}, hi: 2},
		{env: map[string]string{"HCCL_MIN_NCHANNELS": "0"}, bad: "HCCL_MIN_NCHANNELS"},
		{env: map[string]string{"HCCL_MAX_NCHANNELS": "17"}, bad: "HCCL_MAX_NCHANNELS"},
		{env: map[string]string{"NCCL_MAX_NCHANNELS": "two"}, bad: "NCCL_MAX_NCHANNELS"},
		{env: map[string]string{"HCCL_MIN_NCHANNELS": "4", "HCCL_MAX_NCHANNELS": "2"}, bad: "exceeds"},
	} {
		getenv := func(k string) string { return tt.env[k] }
		k, err := knobsFromEnv(getenv)
		m, _, terr := selector.FromEnv(getenv, 0)
		if tt.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tt.bad) || terr == nil {
				t.Errorf("%v: runtime %v, selector.FromEnv %v; want errors naming %s", tt.env, err, terr, tt.bad)
			}
			continue
		}
		if err != nil || terr != nil {
			t.Fatalf("%v: %v, %v", tt.env, err, terr)
		}
		if k.MinChannels != tt.lo || k.MaxChannels != tt.hi || m.ChannelFloor != tt.lo || m.ChannelCeil != tt.hi {
			t.Errorf("%v: runtime %d..%d, model %d..%d; want %d..%d", tt.env, k.MinChannels, k.MaxChannels, m.ChannelFloor, m.ChannelCeil, tt.lo, tt.hi)
		}
		jm, _, err := selectorSettings(k, 0, 0).Model()
		if err != nil || jm.ChannelFloor != tt.lo || jm.ChannelCeil != tt.hi {
			t.Errorf("%v: the job prices with %d..%d (%v)", tt.env, jm.ChannelFloor, jm.ChannelCeil, err)
		}
	}
}

package control

import (
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
)

// TestClock: on one machine the offset is within its error bar of zero
// (the clocks are the same clock), and the bar is half a loopback round
// trip, well under a second even on a loaded machine.
func TestClock(t *testing.T) {
	j := newJob(t, 1, nil)
	ctx := testCtx(t, 10*time.Second)
	c := j.dial(ctx, 0)
	off, err := c.Clock(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if off.Error < 0 || off.Error > time.Second {
		t.Fatalf("error bar %v", off.Error)
	}
	// Wall clocks read microseconds apart may differ by their resolution.
	if d := off.Offset; d > off.Error+time.Millisecond || d < -off.Error-time.Millisecond {
		t.Fatalf("offset %v outside ±%v on one machine", d, off.Error)
	}
}

// TestWhereOnHeartbeat: what a rank stores into Client.Where reaches the
// server's status with its next heartbeat.
func TestWhereOnHeartbeat(t *testing.T) {
	const beat = 20 * time.Millisecond
	j := newJob(t, 2, func(c *ServerConfig) { c.HeartbeatInterval, c.LostAfter = beat, 50*beat })
	ctx := testCtx(t, 10*time.Second)
	c := j.dial(ctx, 1)
	want := wire.MakeWhere(3, 7, 0)
	c.SetProgress(9, true)
	c.Where().Store(uint64(want))
	for {
		st := j.s.Status()[1]
		if st.Where == want && st.Seq == 9 && st.InCall {
			if coll, _ := st.Where.Coll(); coll != 3 || st.Where.Step() != 7 || st.Where.Peer() != 0 {
				t.Fatalf("where %#x decodes as coll %d step %d peer %d", uint64(st.Where), coll, st.Where.Step(), st.Where.Peer())
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("status of rank 1 is %+v, want where %#x", st, uint64(want))
		case <-time.After(beat):
		}
	}
}

package control

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
)

// ClockOffset is how this rank's clock relates to the server's: a time t
// of this rank's clock is t+Offset on the server's, within ±Error (half
// the round trip of the sample it was taken from). Traces of ranks on
// different hosts are aligned with it (hcclrun trace merge).
type ClockOffset struct {
	Offset time.Duration
	Error  time.Duration
	// At is when, on this rank's clock, the sample was taken.
	At time.Time
}

// Clock measures the offset of this rank's clock against the server's
// with samples round trips (at least 1), keeping the one of the shortest
// round trip, whose midpoint is the best guess of when the server read
// its clock (Cristian's algorithm).
func (c *Client) Clock(ctx context.Context, samples int) (ClockOffset, error) {
	best := ClockOffset{Error: -1}
	for range max(samples, 1) {
		t0 := time.Now()
		r, err := c.call(ctx, &msg{Type: tClock}, "clock", false)
		t1 := time.Now()
		if err != nil {
			return ClockOffset{}, err
		}
		if len(r.Value) != 8 {
			return ClockOffset{}, fmt.Errorf("control: rank %d: clock: reply of %d bytes, want 8", c.rank, len(r.Value))
		}
		server := time.Unix(0, int64(binary.LittleEndian.Uint64(r.Value)))
		rtt := t1.Sub(t0)
		if best.Error >= 0 && rtt/2 >= best.Error {
			continue
		}
		mid := t0.Add(rtt / 2)
		best = ClockOffset{Offset: server.Sub(mid), Error: rtt / 2, At: mid}
	}
	return best, nil
}

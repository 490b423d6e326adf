package selector

import "time"

// SlowHost is how a host whose shared core changes hands slowly prices
// the oversubscribed rounds: a job whose launcher measured a hand-off of
// Handoff or more on its host (internal/handoff, read from the rank
// table) prices with Wake, PollMax and NetAlpha in place of the model's.
//
// A second set rather than one model, because the hosts the constants
// were fitted on disagree with ranks beyond the cores: where a context
// switch needs the hypervisor, a second dependent round costs more than
// Wake, a polled receive of 32 KiB no hand-off, and a message over
// loopback TCP more than the net alpha, which moves the choice at a few
// sizes (AllReduce of 32 KiB at np 3, Reduce at np 4; AllReduce over TCP
// of 256 KiB at np 2). The cost of a hand-off is what tells such a host
// apart (docs/selector.md#the-slow-host).
type SlowHost struct {
	Handoff  time.Duration // 0: every host prices alike
	Wake     time.Duration
	PollMax  int64
	NetAlpha time.Duration // the net class's alpha; 0 keeps the model's
}

// WithHandoff returns m priced for a host whose shared-core hand-off
// measured h; 0 (not measured) leaves m as it is. Every rank of a job
// reads the same h from the rank table, so their models agree. A
// measured h is also the price of the crowd (Model.Crowd): one rank's
// turn on a shared core.
func (m Model) WithHandoff(h time.Duration) Model {
	if h > 0 {
		m.Crowd = h
	}
	if m.Slow.Handoff > 0 && h >= m.Slow.Handoff {
		m.Wake, m.PollMax = m.Slow.Wake, m.Slow.PollMax
		if m.Slow.NetAlpha > 0 {
			m.Links[Net].Alpha = m.Slow.NetAlpha
		}
	}
	return m
}

package selector

import "time"

// SlowHost is how a host whose shared core changes hands slowly prices
// the oversubscribed rounds: a job whose launcher measured a hand-off of
// Handoff or more on its host (shm.MeasureHandoff, read from the rank
// table) prices with Wake and PollMax in place of the model's.
//
// Why a second set and not one model: the two hosts the constants were
// fitted on disagree at 32 KiB with ranks beyond the cores. On the Intel
// host under KVM (cal36) mesh AllReduce at np 3 took 12.8 us against
// one-shot's 17.2, and a tree Reduce at np 4 9.94 against mesh's 11.0; on
// the AMD host under PVM (cal40, cal41) the same points went the other
// way (25.2 against 19.6, and 24.6 against 17.2): there a second
// dependent round costs 7-8 us where the model's Wake is 5 (mesh against
// one-shot at np 3, 2-8 KiB: 18.2-20.5 us against 11.0-12.2), and a
// polled receive of 32 KiB no hand-off. Priced with wake 7us and
// poll.max 32K, cal40's choices were within 10% of the fastest at 215 of
// 228 points with none clearly worse, against 213 and 2; cal36's would
// have been 1.34x and 1.11x the fastest at those two points. What is
// taken to tell the hosts apart is the cost of a context switch, which
// needs the hypervisor under PVM and not under KVM; it was measured on
// the PVM host only (docs/selector.md).
//
// A message over loopback TCP wakes a receiver parked in the kernel, the
// same trip through the hypervisor: one-shot AllReduce of 8 B over TCP at
// np 2 measured 13.3-14.5 us on the PVM host and 3.65 on the KVM one.
// Priced with a net alpha of 13 us there (NetAlpha), one-shot is taken
// over ring for AllReduce over TCP at np 2 256 KiB, where it measured
// 1.12, 1.25 and 1.15 times faster round by round in cal42, cal43 and
// cal45: one point more on each of cal42-cal45, none lost on cal41-cal45.
// On the KVM host ring was the faster there (cal36: 53.1 us against
// 56.1), which the model's 10 us keeps.
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

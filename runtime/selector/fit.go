package selector

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Sample is one measurement Fit learns from: algorithm Algo served Call in
// Time (a median, the slowest rank's). NoShm says the ranks talked over TCP
// although they share a server (HCCL_SHM_DISABLE=1): the model then prices
// the job with WithoutShm, so the sample teaches the net class.
type Sample struct {
	Call  Call
	Algo  string
	NoShm bool
	Time  time.Duration
}

// WithoutShm returns m for a job that may not use shared memory
// (HCCL_SHM_DISABLE=1): every link is priced as the net class. Mesh and
// one-shot still run (they need one server, not shm).
func (m Model) WithoutShm() Model {
	m.NoShm = true
	return m
}

// The constants Fit solves for, in the order of the feature vector.
const (
	fitShmAlpha = iota
	fitShmBeta
	fitNetAlpha
	fitNetBeta
	fitGamma
	fitCopy
	fitStep
	fitWake
	fitHandoff
	fitNetWake
	fitHead
	fitCrowd
	numFit
)

// terms is the time of shape s on topology t with nc channels as a linear
// form in the constants Fit solves for (the same order as fitted): the
// channel count, the parallel gains, the oversubscription of the cores
// and the memory slowdown are fixed by m and t, not by those constants.
func (m Model) terms(s shape, t Topo, nc int) [numFit]float64 {
	var f [numFit]float64
	if m.NoShm {
		for _, v := range []*[numClasses]float64{&s.lat, &s.bytes} {
			v[Net] += v[Shm]
			v[Shm] = 0
		}
		s.exchBytes = 0
		s.heads = 0
	}
	// Ranks beyond the cores share them: byte work (copies into and out
	// of rings and sockets, reductions) goes as fast as cores/ranks, and a
	// rank waiting on shm sleeps at once instead of spinning, so each
	// dependent round costs a wake-up.
	share := 1.0
	over := m.Cores > 0 && t.perServer() > m.Cores
	if over {
		working := float64(t.perServer())
		busy := s.busy
		if s.ringsBusy > 0 && !m.posts(s) {
			busy = s.ringsBusy
		}
		if busy > 0 {
			working *= busy // the waiting ranks sleep (shape.busy)
		}
		share = max(working/float64(m.Cores), 1)
	}
	// Byte work also slows down as the working set leaves the caches.
	work := share * m.memory(t, s.size)
	gain := 1
	for c := Class(0); c < numClasses; c++ {
		g := max(min(nc, m.Links[c].Parallel), 1)
		col := fitShmAlpha + 2*int(c)
		if c == Shm && over {
			f[fitWake] = s.lat[c]
		} else {
			f[col] = s.lat[c]
		}
		bytes := s.bytes[c]
		if c == Shm && m.posts(s) {
			bytes -= s.fromSend / 2 // one copy instead of the ring's two
		}
		if c == Shm && !m.NoShm {
			bytes -= s.fused // received as it is reduced
		}
		// An exchange round moves only while both partners hold a
		// core: with more ranks at work than cores its bytes cost more
		// than a chain's.
		if c == Shm && share > 1 && m.Exchange > 1 {
			bytes += s.exchBytes * (m.Exchange - 1)
		}
		if c == Net && over && m.FanOut > 1 && s.handoffs > 0 && s.maxOp >= float64(m.FanOutMin) {
			bytes *= m.FanOut // big transfers to several peers at once
		}
		f[col+1] = bytes / float64(g) * work
		if s.lat[c] > 0 {
			gain = max(gain, g)
		}
	}
	f[fitGamma] = s.reduce / float64(gain) * work
	f[fitCopy] = s.copy / float64(gain) * work
	f[fitStep] = s.local + s.msgs*float64(nc)
	// With a core per rank a round's head is on the critical path; on
	// shared cores the round's wake-up dwarfs it.
	if !over {
		f[fitHead] = s.heads
	}
	// Only shm receives are polled (a socket cannot say that a frame has
	// arrived): over TCP every receive beyond a step's first is handed
	// to a worker, whatever its size.
	if over && (s.maxOp > float64(m.PollMax) || m.NoShm) {
		f[fitHandoff] = s.handoffs * float64(nc)
	}
	// Every message received over the net class waits parked, and then
	// for a core: the first of each round, counted as the rounds are
	// (Wake), and over TCP alone the others of the round too, counted as
	// the hand-offs are (per channel), at NetWakeOthers of the price.
	if over {
		received := s.lat[Net]
		if m.NoShm {
			received += s.handoffs * float64(nc) * m.NetWakeOthers
		}
		f[fitNetWake] = received * share
	}
	if over && share > m.CrowdFrom && m.CrowdFrom > 0 {
		f[fitCrowd] = (share - m.CrowdFrom) * (s.lat[Shm] + s.msgs*float64(nc))
	}
	return f
}

// posts reports whether the transfers of s from the send buffer go in
// place (Model.Posted).
func (m Model) posts(s shape) bool {
	return !m.NoShm && m.Posted&PostedBit(s.coll) != 0 && s.maxOp >= float64(m.PostMin)
}

// features is sample's terms under base, on one channel as Predict
// prices.
func (m Model) features(smp Sample) ([numFit]float64, error) {
	s, err := shapeOf(smp.Algo, smp.Call.Coll, smp.Call.Topo, smp.Call.Bytes)
	if err != nil {
		return [numFit]float64{}, err
	}
	m.NoShm = m.NoShm || smp.NoShm
	return m.terms(s, smp.Call.Topo, 1), nil // as Predict prices
}

func (m Model) fitted() [numFit]float64 {
	return [numFit]float64{
		m.Links[Shm].Alpha.Seconds(), m.Links[Shm].Beta,
		m.Links[Net].Alpha.Seconds(), m.Links[Net].Beta,
		m.Gamma, m.Copy, m.Step.Seconds(),
		m.Wake.Seconds(), m.Handoff.Seconds(), m.NetWake.Seconds(),
		m.Head, m.Crowd.Seconds(),
	}
}

func (m Model) withFitted(x [numFit]float64) Model {
	d := func(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
	m.Links[Shm].Alpha, m.Links[Shm].Beta = d(x[fitShmAlpha]), x[fitShmBeta]
	m.Links[Net].Alpha, m.Links[Net].Beta = d(x[fitNetAlpha]), x[fitNetBeta]
	m.Gamma, m.Copy, m.Step = x[fitGamma], x[fitCopy], d(x[fitStep])
	m.Wake, m.Handoff, m.NetWake = d(x[fitWake]), d(x[fitHandoff]), d(x[fitNetWake])
	m.Head = x[fitHead]
	m.Crowd = d(x[fitCrowd])
	return m
}

// Fit returns base with its latencies, inverse bandwidths, reduction,
// copy, step, wake-up and hand-off costs chosen to minimise the sum over samples of the
// squared relative error (predicted/measured - 1)^2, so that a 10 us call
// weighs as much as a 100 ms one. The model is linear in those constants
// once the channel count is fixed, so this is a weighted linear least
// squares problem. A faint pull towards base's values (a ridge term, 1e-6
// of the data's weight) settles what the samples cannot tell apart, such
// as alpha and step when every sample has one message per round, and
// keeps constants no sample exercises; a constant the solution would make
// negative keeps base's value and the others are solved again. Channel and
// segment settings are not fitted.
func Fit(base Model, samples []Sample) (Model, error) {
	var rows [][numFit]float64
	for _, smp := range samples {
		if smp.Time <= 0 {
			continue
		}
		f, err := base.features(smp)
		if err != nil {
			return base, fmt.Errorf("fit: sample %s with %s: %w", smp.Call, smp.Algo, err)
		}
		t := smp.Time.Seconds()
		for i := range f {
			f[i] /= t
		}
		rows = append(rows, f)
	}
	if len(rows) == 0 {
		return base, errors.New("fit: no usable sample")
	}
	x := base.fitted()
	var free [numFit]bool
	for j := range free {
		for _, r := range rows {
			free[j] = free[j] || r[j] != 0
		}
	}
	for range numFit {
		sol, ok := solveFixed(rows, x, free, 1e-6*float64(len(rows)))
		if !ok {
			return base, errors.New("fit: the samples do not determine the constants (singular system)")
		}
		worst := -1
		for j := range sol {
			if free[j] && sol[j] < 0 && (worst < 0 || sol[j] < sol[worst]) {
				worst = j
			}
		}
		if worst < 0 {
			return base.withFitted(sol), nil
		}
		free[worst] = false
	}
	return base, errors.New("fit: no non-negative solution")
}

// solveFixed solves min sum_i (r_i . x - 1)^2 + ridge sum_j (x_j/x0_j - 1)^2
// over the free coordinates j, the others held at x0's values, by the
// normal equations.
func solveFixed(rows [][numFit]float64, x [numFit]float64, free [numFit]bool, ridge float64) ([numFit]float64, bool) {
	var idx []int
	for j := range free {
		if free[j] {
			idx = append(idx, j)
		}
	}
	k := len(idx)
	a := make([][]float64, k)
	for i := range a {
		a[i] = make([]float64, k+1)
	}
	for _, r := range rows {
		rhs := 1.0
		for j := range r {
			if !free[j] {
				rhs -= r[j] * x[j]
			}
		}
		for p, jp := range idx {
			for q, jq := range idx {
				a[p][q] += r[jp] * r[jq]
			}
			a[p][k] += r[jp] * rhs
		}
	}
	for p, j := range idx {
		if x[j] > 0 {
			a[p][p] += ridge / (x[j] * x[j])
			a[p][k] += ridge / x[j]
		}
	}
	// Gaussian elimination with partial pivoting; columns are scaled by
	// their diagonal first, since alphas (1e-5) and betas (1e-9) differ by
	// orders of magnitude.
	scale := make([]float64, k)
	for p := range k {
		scale[p] = math.Sqrt(a[p][p])
		if scale[p] == 0 {
			return x, false
		}
	}
	for p := range k {
		for q := range k {
			a[p][q] /= scale[p] * scale[q]
		}
		a[p][k] /= scale[p]
	}
	for c := range k {
		piv := c
		for r := c + 1; r < k; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[piv][c]) {
				piv = r
			}
		}
		if math.Abs(a[piv][c]) < 1e-12 {
			return x, false
		}
		a[c], a[piv] = a[piv], a[c]
		for r := range k {
			if r == c {
				continue
			}
			f := a[r][c] / a[c][c]
			for q := c; q <= k; q++ {
				a[r][q] -= f * a[c][q]
			}
		}
	}
	out := x
	for p, j := range idx {
		out[j] = a[p][k] / a[p][p] / scale[p]
	}
	return out, true
}

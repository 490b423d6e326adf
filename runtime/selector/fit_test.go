package selector

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// fitCalls are the calls calibrate measures: one server, np 2 to 4, sizes
// 8 B to 64 MiB, every algorithm that serves each collective.
func fitSamples(t *testing.T, truth Model, noise func(i int) float64) []Sample {
	t.Helper()
	var out []Sample
	i := 0
	for _, coll := range []plan.Coll{plan.AllReduce, plan.AllGather, plan.ReduceScatter, plan.Broadcast} {
		for n := 2; n <= 4; n++ {
			for size := int64(8); size <= 64<<20; size *= 4 {
				for _, noShm := range []bool{false, true} {
					m := truth
					if noShm {
						if coll != plan.AllReduce {
							continue
						}
						m = truth.WithoutShm()
					}
					call := Call{coll, size, Topo{Ranks: n, Servers: 1}}
					for _, e := range Predict(m, Policy{}, call).Candidates {
						if e.Err != nil {
							continue
						}
						i++
						out = append(out, Sample{call, e.Algo, noShm, time.Duration(float64(e.Time) * noise(i))})
					}
				}
			}
		}
	}
	return out
}

// fitBase is the model the fit tests start from: fixed constants (those of
// the first calibration) rather than DefaultModel's, which move with every
// calibration. The fit's faint ridge pulls towards its base, and what these
// tests expect of it must not depend on where the last calibration put it:
// with the second calibration's constants, the exact recovery missed the
// step 3.7x and the negative-beta data fitted a positive shm beta.
func fitBase() Model {
	m := DefaultModel()
	// The channels stay the default's: the fit solves for constants
	// once the channels are fixed, by its base.
	m.Links[Shm] = LinkCost{Alpha: 10 * time.Microsecond, Beta: 1 / 7.4e9, Parallel: m.Links[Shm].Parallel}
	m.Links[Net] = LinkCost{Alpha: 53 * time.Microsecond, Beta: 1 / 1.36e9, Parallel: m.Links[Net].Parallel}
	m.Gamma, m.Copy, m.Step = 1/3.4e9, 1/2.4e9, 500*time.Nanosecond
	m.Handoff, m.Wake = 80*time.Microsecond, 35*time.Microsecond
	return m
}

func TestFitRecoversConstants(t *testing.T) {
	truth := DefaultModel()
	truth.Links[Shm].Alpha, truth.Links[Shm].Beta = 37*time.Microsecond, 1/3e9
	truth.Links[Net].Alpha, truth.Links[Net].Beta = 91*time.Microsecond, 1/0.4e9
	truth.Gamma, truth.Copy, truth.Step = 1/1.7e9, 1/6e9, 2*time.Microsecond
	// Two cores: np 3 and 4 are oversubscribed and teach Wake, np 2 the
	// shm alpha.
	truth.Cores, truth.Wake, truth.Handoff = 2, 70*time.Microsecond, 15*time.Microsecond
	tests := []struct {
		name  string
		noise func(int) float64
		tol   float64 // relative, per constant
	}{
		{"exact", func(int) float64 { return 1 }, 0.03}, // the ridge and ns rounding
		// +-5% alternating: the fit averages it out.
		{"noisy", func(i int) float64 { return 1 + 0.05*float64(i%3-1) }, 0.25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := fitBase()
			base.Cores = truth.Cores
			got, err := Fit(base, fitSamples(t, truth, tt.noise))
			if err != nil {
				t.Fatal(err)
			}
			want, have := truth.fitted(), got.fitted()
			names := []string{"shm.alpha", "shm.beta", "net.alpha", "net.beta", "gamma", "copy", "step", "wake", "handoff"}
			for j := range want {
				tol := tt.tol
				if j == fitStep {
					tol *= 4 // a 2 us step among 100 us calls is weakly determined
				}
				if math.Abs(have[j]/want[j]-1) > tol {
					t.Errorf("%s = %g, want %g within %.1f%%", names[j], have[j], want[j], 100*tol)
				}
			}
		})
	}
}

func TestFitKeepsUnexercisedAndNegative(t *testing.T) {
	base := DefaultModel()
	// Only shm samples of a few bytes, all alike: nothing tells alpha from
	// step or the byte constants apart (the ridge settles it), and net is
	// never exercised, so it keeps base's values exactly.
	var samples []Sample
	for size := int64(8); size <= 512; size *= 4 {
		samples = append(samples, Sample{Call{plan.AllReduce, size, Topo{Ranks: 2, Servers: 1}}, "ring", false, 100 * time.Microsecond})
	}
	got, err := Fit(base, samples)
	if err != nil {
		t.Fatal(err)
	}
	if got.Links[Net] != base.Links[Net] {
		t.Errorf("net class changed without a net sample: %+v", got.Links[Net])
	}
	for j, v := range got.fitted() {
		if v < 0 {
			t.Errorf("constant %d negative: %g", j, v)
		}
	}
	// Two rounds of a few bytes: alpha carries the time.
	if a := got.Links[Shm].Alpha; a < 40*time.Microsecond || a > 51*time.Microsecond {
		t.Errorf("shm.alpha = %v, want about 50us (100us over two rounds)", a)
	}
}

func TestFitErrors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		samples []Sample
		want    string
	}{
		{"none", nil, "no usable sample"},
		{"zero time", []Sample{{Call{plan.AllReduce, 8, Topo{Ranks: 2, Servers: 1}}, "ring", false, 0}}, "no usable sample"},
		{"unknown algorithm", []Sample{{Call{plan.AllReduce, 8, Topo{Ranks: 2, Servers: 1}}, "nosuch", false, time.Millisecond}}, "unknown algorithm"},
		{"cannot serve", []Sample{{Call{plan.Broadcast, 8, Topo{Ranks: 2, Servers: 1}}, "rhd", false, time.Millisecond}}, "does not implement"},
	} {
		if _, err := Fit(DefaultModel(), tt.samples); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestWithoutShm: a job without shm costs what it would if its shm class
// were the net class, and its rounds are never charged the shm wake-up
// nor, at 4 MiB, the premium of exchange rounds over shm.
func TestWithoutShm(t *testing.T) {
	m := DefaultModel()
	m.Cores, m.Wake = 2, time.Second // a wake-up would show
	m.FanOut = 1                     // net only, shm has no equivalent: TestFanOut
	alike := m
	alike.Links[Shm] = m.Links[Net]
	alike.Cores = 0
	alike.Exchange = 1 // only shm rounds pay it
	for _, c := range []struct {
		n     int
		bytes int64
	}{{2, 8}, {4, 8}, {4, 4 << 20}} {
		n := c.n
		call := Call{plan.AllReduce, c.bytes, Topo{Ranks: n, Servers: 1}}
		got := Predict(m.WithoutShm(), Policy{}, call)
		want := Predict(alike, Policy{}, call)
		if n > 2 {
			// Oversubscribed: bytes slow down alike, every message
			// received costs the net alpha (the first of a round) or
			// the hand-off (the others: sockets are not polled,
			// whatever the size, a PollMax of 0) and a net wake-up
			// times ranks/cores, the others NetWakeOthers of it.
			a := alike
			netWake := time.Duration(float64(m.NetWake) * float64(n) / 2)
			a.Cores, a.Wake, a.PollMax = 2, m.Links[Net].Alpha+netWake, 0
			a.Handoff += time.Duration(float64(netWake) * m.NetWakeOthers)
			want = Predict(a, Policy{}, call)
		}
		wantTime := map[string]time.Duration{}
		for _, w := range want.Candidates {
			wantTime[w.Algo] = w.Time
		}
		for _, e := range got.Candidates {
			if e.Err != nil {
				continue
			}
			if w := wantTime[e.Algo]; e.Time-w > 1 || w-e.Time > 1 {
				t.Errorf("np %d, %d bytes: without shm %s %v, want %v", n, c.bytes, e.Algo, e.Time, w)
			}
			if e.Time >= time.Second {
				t.Errorf("np %d: %s charged a shm wake-up without shm: %v", n, e.Algo, e.Time)
			}
		}
	}
}

// TestFitNegativeKeepsBase feeds times that fall with the size: the best
// unconstrained inverse bandwidth is negative, so it keeps base's value.
func TestFitNegativeKeepsBase(t *testing.T) {
	base := fitBase()
	var samples []Sample
	for size := int64(1 << 10); size <= 1<<20; size *= 4 {
		d := 2*time.Millisecond - time.Duration(size)
		samples = append(samples, Sample{Call{plan.Broadcast, size, Topo{Ranks: 2, Servers: 1}}, "tree", false, d})
	}
	got, err := Fit(base, samples)
	if err != nil {
		t.Fatal(err)
	}
	if got.Links[Shm].Beta != base.Links[Shm].Beta {
		t.Errorf("shm beta %g, want base's %g kept", got.Links[Shm].Beta, base.Links[Shm].Beta)
	}
	for j, v := range got.fitted() {
		if v < 0 {
			t.Errorf("constant %d negative: %g", j, v)
		}
	}
}

// TestPollMaxDropsHandoffs: with ranks outnumbering cores, a mesh step's
// extra receives cost a handoff each only when its transfers are larger
// than PollMax (the executor polls smaller ones on one goroutine).
func TestPollMaxDropsHandoffs(t *testing.T) {
	m := DefaultModel()
	m.Cores = 2
	topo := Topo{Ranks: 4, Servers: 1}
	for _, tt := range []struct {
		bytes    int64
		handoffs bool
	}{
		{8, false}, {4 * m.PollMax, false}, {4*m.PollMax + 4, true}, {16 << 20, true},
	} {
		s, err := shapeOf("mesh", plan.AllGather, topo, tt.bytes)
		if err != nil {
			t.Fatal(err)
		}
		if s.handoffs == 0 {
			t.Fatalf("mesh AllGather of %d bytes at np 4 has no extra receives", tt.bytes)
		}
		f := m.terms(s, topo, 1)
		if got := f[fitHandoff] > 0; got != tt.handoffs {
			t.Errorf("mesh AllGather of %d bytes (transfers of %v) at np 4 on 2 cores: handoff term %v, want charged %v", tt.bytes, s.maxOp, f[fitHandoff], tt.handoffs)
		}
	}
}

// TestFanOut: over TCP with ranks beyond the cores, a step that sends
// transfers of FanOutMin bytes or more to several peers at once costs
// FanOut times its bytes, and nothing else does; with the default
// constants np 3 on 2 cores chooses one-shot at 32 KiB, mesh at 128 KiB
// (where one-shot measured 1.8 times mesh) and ring at 1 MiB.
func TestFanOut(t *testing.T) {
	m := DefaultModel()
	m.Cores = 2
	off := m
	off.FanOut = 1
	price := func(m Model, algo string, n int, bytes int64) time.Duration {
		for _, e := range Predict(m.WithoutShm(), Policy{}, Call{plan.AllReduce, bytes, Topo{Ranks: n, Servers: 1}}).Candidates {
			if e.Algo == algo {
				return e.Time
			}
		}
		t.Fatalf("%s not priced", algo)
		return 0
	}
	for _, c := range []struct {
		algo    string
		n       int
		bytes   int64
		dearer  bool
		because string
	}{
		{"oneshot", 3, 128 << 10, true, "two transfers of 128 KiB at once"},
		{"mesh", 3, 1 << 20, true, "two transfers of 341 KiB at once"},
		{"oneshot", 3, 64 << 10, false, "transfers below FanOutMin"},
		{"ring", 3, 1 << 20, false, "one peer at a time"},
		{"rhd", 3, 1 << 20, false, "one peer at a time"},
		{"oneshot", 2, 1 << 20, false, "a core per rank"},
	} {
		got, base := price(m, c.algo, c.n, c.bytes), price(off, c.algo, c.n, c.bytes)
		if (got > base) != c.dearer {
			t.Errorf("%s np %d %d bytes: %v with FanOut, %v without; want dearer %v (%s)", c.algo, c.n, c.bytes, got, base, c.dearer, c.because)
		}
	}
	// On shm the premium never applies.
	for _, algo := range []string{"oneshot", "mesh"} {
		call := Call{plan.AllReduce, 1 << 20, Topo{Ranks: 3, Servers: 1}}
		if a, b := m.estimate(algo, call).Time, off.estimate(algo, call).Time; a != b {
			t.Errorf("%s over shm: %v with FanOut, %v without", algo, a, b)
		}
	}
	for _, c := range []struct {
		bytes int64
		want  string
	}{{32 << 10, "oneshot"}, {128 << 10, "mesh"}, {1 << 20, "ring"}} {
		tab := Predict(m.WithoutShm(), Policy{}, Call{plan.AllReduce, c.bytes, Topo{Ranks: 3, Servers: 1}})
		if e, err := tab.Chosen(); err != nil || e.Algo != c.want {
			t.Errorf("np 3 over TCP, %d bytes: chose %v (%v), want %s\n%s", c.bytes, e.Algo, err, c.want, tab)
		}
	}
}

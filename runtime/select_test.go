package runtime

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// TestSelectorFromEnv: the model a tool such as hcclrun plan prices with
// (selector.FromEnv) is the one a job would: HCCL_SHM_DISABLE prices the
// ranks of a server as the network class, HCCL_SHM_DIRECT sets which
// collectives post in place.
func TestSelectorFromEnv(t *testing.T) {
	predict := func(env map[string]string) (selector.Model, selector.Estimate) {
		t.Helper()
		m, p, err := selector.FromEnv(func(k string) string { return env[k] }, 0)
		if err != nil {
			t.Fatal(err)
		}
		call := selector.Call{Coll: plan.AllGather, Bytes: 1 << 20, Topo: selector.Topo{Ranks: 2, Servers: 1}}
		table := selector.Predict(m, p, call)
		e, err := table.Chosen()
		if err != nil {
			t.Fatal(err)
		}
		return m, e
	}
	def, shm := predict(map[string]string{})
	if def.Posted&selector.PostedBit(plan.AllGather) == 0 {
		t.Error("by default AllGather is not priced as posted")
	}
	copied, ring := predict(map[string]string{"HCCL_SHM_DIRECT": "0"})
	if copied.Posted != 0 {
		t.Errorf("HCCL_SHM_DIRECT=0: posted set %#x, want none", copied.Posted)
	}
	_, tcp := predict(map[string]string{"HCCL_SHM_DISABLE": "1"})
	if !(shm.Time < ring.Time && ring.Time < tcp.Time) {
		t.Errorf("AllGather 1 MiB at np 2: posted %v, through the rings %v, over TCP %v; want them in that order, rising", shm.Time, ring.Time, tcp.Time)
	}
	if _, _, err := selector.FromEnv(func(k string) string { return map[string]string{"HCCL_ALGO": "bogus"}[k] }, 0); err == nil {
		t.Error("HCCL_ALGO=bogus accepted")
	}
}

// TestSelectorSettingsFromEnv: the runtime reads the knobs the selector
// prices with itself (knobsFromEnv) and tools through selector.FromEnv;
// for every setting of those variables the two price alike, and refuse
// alike.
func TestSelectorSettingsFromEnv(t *testing.T) {
	tuning := filepath.Join(t.TempDir(), "tuning")
	if err := os.WriteFile(tuning, []byte("wake 9us\nnet.alpha 4us\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flags := []string{"", "0", "1", "2"}
	for _, disable := range flags {
		for _, direct := range flags {
			for _, directDisable := range flags {
				for _, algo := range []string{"", "ring", "allreduce:rhd", "bogus"} {
					for _, file := range []string{"", tuning} {
						for _, handoff := range []time.Duration{0, 3 * time.Microsecond} {
							env := map[string]string{"HCCL_SHM_DISABLE": disable, "HCCL_SHM_DIRECT": direct,
								"HCCL_SHM_DIRECT_DISABLE": directDisable, "HCCL_ALGO": algo, "HCCL_TUNING_FILE": file}
							getenv := func(k string) string { return env[k] }
							tm, tp, terr := selector.FromEnv(getenv, handoff)
							knobs, err := knobsFromEnv(getenv)
							if err == nil {
								var jm selector.Model
								var jp selector.Policy
								jm, jp, err = selectorSettings(knobs, 0, handoff).Model()
								if err == nil && (tm != jm || tp.String() != jp.String()) {
									t.Errorf("%v, hand-off %v: selector.FromEnv prices\n%+v %q\nwhere a job prices\n%+v %q", env, handoff, tm, tp, jm, jp)
								}
							}
							if (err == nil) != (terr == nil) {
								t.Errorf("%v: a job's error %v, selector.FromEnv's %v", env, err, terr)
							}
						}
					}
				}
			}
		}
	}
}

// TestSelectorCores: a job prices with its server's cores (the rank
// table's, when the launcher bound each rank to one CPU), a tuning file's
// "cores" over them, and tools with their own process's.
func TestSelectorCores(t *testing.T) {
	if got := hostCPUs(6, "0-1"); got != 6 {
		t.Errorf("hostCPUs with the table's 6 CPUs and an affinity of 2: %d, want 6", got)
	}
	if got := hostCPUs(0, "0-2,5"); got != 4 {
		t.Errorf("hostCPUs of an unbound rank with CPUs 0-2,5: %d, want 4", got)
	}
	m, _, err := selectorSettings(tunables{}, 6, 0).Model()
	if err != nil || m.Cores != 6 {
		t.Fatalf("selectorSettings for 6 cores: cores %d, err %v", m.Cores, err)
	}
	path := filepath.Join(t.TempDir(), "tuning")
	if err := os.WriteFile(path, []byte("cores 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, _, err := selectorSettings(tunables{TuningFile: path}, 6, 0).Model(); err != nil || m.Cores != 3 {
		t.Errorf("a tuning file's cores 3 over 6: cores %d, err %v", m.Cores, err)
	}
	if m, _, err := selector.FromEnv(func(string) string { return "" }, 0); err != nil || m.Cores != goruntime.NumCPU() {
		t.Errorf("selector.FromEnv: cores %d, err %v; want this process's %d", m.Cores, err, goruntime.NumCPU())
	}
}

// TestSelectorHandoff: a job whose launcher measured a slow hand-off
// of a shared core prices its oversubscribed rounds as such a host's
// (selector.SlowHost), which moves the choice of an AllReduce of 32 KiB at
// np 3 on 2 cores from mesh to one-shot; a tuning file's settings still
// win, and a fast or unmeasured hand-off changes nothing. Over TCP its
// net alpha takes one-shot for an AllReduce of 256 KiB at np 2.
func TestSelectorHandoff(t *testing.T) {
	def := selector.DefaultModel()
	slow := def.Slow.Handoff + def.Slow.Handoff/2
	// choose prices call in a job with knobs, the hand-off and a tuning
	// file of the given text ("": none), and returns the model and its
	// choice.
	choose := func(knobs tunables, handoff time.Duration, tuning string, call selector.Call) (selector.Model, string) {
		t.Helper()
		if tuning != "" {
			knobs.TuningFile = filepath.Join(t.TempDir(), "tuning")
			if err := os.WriteFile(knobs.TuningFile, []byte(tuning), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, p, err := selectorSettings(knobs, 2, handoff).Model()
		if err != nil {
			t.Fatal(err)
		}
		e, err := selector.Predict(m, p, call).Chosen()
		if err != nil {
			t.Fatal(err)
		}
		return m, e.Algo
	}
	shm32K := selector.Call{Coll: plan.AllReduce, Bytes: 32 << 10, Topo: selector.Topo{Ranks: 3, Servers: 1}}
	for _, h := range []time.Duration{0, def.Slow.Handoff / 2} {
		if m, algo := choose(tunables{}, h, "", shm32K); m.Wake != def.Wake || m.PollMax != def.PollMax || algo != "mesh" {
			t.Errorf("hand-off %v: wake %v, poll.max %d, AllReduce np 3 32 KiB %s; want DefaultModel's %v, %d and mesh", h, m.Wake, m.PollMax, algo, def.Wake, def.PollMax)
		}
	}
	if m, algo := choose(tunables{}, slow, "", shm32K); m.Wake != def.Slow.Wake || m.PollMax != def.Slow.PollMax || algo != "oneshot" {
		t.Errorf("hand-off %v: wake %v, poll.max %d, AllReduce np 3 32 KiB %s; want the slow host's %v, %d and oneshot", slow, m.Wake, m.PollMax, algo, def.Slow.Wake, def.Slow.PollMax)
	}
	if m, _ := choose(tunables{}, slow, "wake 9us\n", shm32K); m.Wake != 9*time.Microsecond || m.PollMax != def.Slow.PollMax {
		t.Errorf("hand-off %v with a tuning file's wake 9us: wake %v, poll.max %d; want 9us and %d", slow, m.Wake, m.PollMax, def.Slow.PollMax)
	}

	// Messages over TCP: the slow host's net alpha takes one-shot for an
	// AllReduce of 256 KiB at np 2 over TCP alone, ring elsewhere; the
	// tuning file's net.alpha wins.
	tcp256K := selector.Call{Coll: plan.AllReduce, Bytes: 256 << 10, Topo: selector.Topo{Ranks: 2, Servers: 1}}
	overTCP := func(handoff time.Duration, tuning string) (time.Duration, string) {
		t.Helper()
		m, algo := choose(tunables{ShmDisable: true}, handoff, tuning, tcp256K)
		return m.Links[selector.Net].Alpha, algo
	}
	if alpha, algo := overTCP(0, ""); alpha != def.Links[selector.Net].Alpha || algo != "ring" {
		t.Errorf("no hand-off, TCP: net alpha %v, AllReduce np 2 256 KiB %s; want %v and ring", alpha, algo, def.Links[selector.Net].Alpha)
	}
	if alpha, algo := overTCP(slow, ""); alpha != def.Slow.NetAlpha || algo != "oneshot" {
		t.Errorf("hand-off %v, TCP: net alpha %v, AllReduce np 2 256 KiB %s; want %v and oneshot", slow, alpha, algo, def.Slow.NetAlpha)
	}
	if alpha, _ := overTCP(slow, "net.alpha 4us\n"); alpha != 4*time.Microsecond {
		t.Errorf("hand-off %v with a tuning file's net.alpha 4us: net alpha %v", slow, alpha)
	}
}

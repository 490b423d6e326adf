package launcher

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/hcclrun/hcclrun/launcher/placement"
	"github.com/hcclrun/hcclrun/ranktable"
)

// DefaultGrace is the delay between SIGTERM and SIGKILL when Job.Grace is 0.
const DefaultGrace = 5 * time.Second

// DefaultControlListen is where a local job's control plane listens: an
// ephemeral port on loopback, reachable by this machine's ranks only.
const DefaultControlListen = "127.0.0.1:0"

// localHostAddr is the address of the single host of a local job in the rank
// table: ranks on one machine reach each other over loopback.
const localHostAddr = "127.0.0.1"

// Job describes one run of a program on NP ranks. The zero value of every
// optional field is a sensible default; Run does not modify the Job.
type Job struct {
	Program string   // path, or name looked up in PATH on each host
	Args    []string // passed to every rank untouched
	NP      int      // number of ranks; may be 0 when Hosts says it
	Dir     string   // working directory of the ranks; "" inherits

	// Export holds -x entries: "NAME=value" sets NAME in every rank, a bare
	// "NAME" passes the launcher's value on. Local ranks inherit the
	// launcher's whole environment anyway; on other hosts only these are
	// passed.
	Export []string

	// Hosts places the ranks: host i runs the next Hosts[i].Ranks ranks
	// (ranks of one host are contiguous, as the rank table requires). nil
	// runs all NP ranks on this machine with a LocalSpawner.
	Hosts []Host

	// Placement, when Hosts is nil, says where the ranks run (hostfile,
	// -H): Run connects to its hosts through Remote before it starts any
	// rank, running the ranks of a host that is this machine directly and
	// the others through an `hcclrun agent` over SSH. NP must be 0 or the
	// placement's size.
	Placement *placement.Placement
	Remote    Remote

	// Bind says how the ranks of this machine are bound to CPUs (bind.go);
	// the zero value is BindAuto.
	Bind BindPolicy

	TagOutput bool          // prefix every line with "[1,rank]<stdout>:"
	Timeout   time.Duration // whole-job limit; 0 means none
	Grace     time.Duration // SIGTERM-to-SIGKILL delay; 0 means DefaultGrace
	// AbortWait is how long the other ranks get, after a failure has been
	// broadcast on the control plane, to end by themselves (and report the
	// abort) before SIGTERM. 0 sends SIGTERM at once.
	AbortWait time.Duration

	// ControlListen is the address the control plane binds; "" means
	// DefaultControlListen. Multi-host jobs bind the chosen interface.
	ControlListen string
	// ControlAdvertise is the address ranks dial (HCCL_CONTROL_ADDR and
	// the table's control_addr): "host:port", or a host that gets the
	// listener's port. "" means the listener's own address, which is right
	// unless ControlListen is a wildcard.
	ControlAdvertise string
	// JobID names the job in the environment and the rank table; ""
	// generates one.
	JobID string

	Stdin  io.Reader // goes to rank 0; nil gives it /dev/null
	Stdout io.Writer // ranks' stdout; nil means os.Stdout
	Stderr io.Writer // ranks' stderr; nil means os.Stderr

	// Signals delivers the signals the launcher received (the CLI passes
	// what signal.Notify catches for SIGINT, SIGTERM, SIGHUP, SIGTSTP and
	// SIGCONT). The first SIGINT, SIGTERM or SIGHUP is forwarded to every
	// rank, SIGKILL following after Grace; a second kills every rank at
	// once. SIGUSR1 prints the job's status to Stderr (jobstatus.go). SIGTSTP stops every rank (SIGSTOP, as mpirun does) and then
	// calls Suspend; SIGCONT resumes them (suspend.go). nil means signals
	// are not handled here.
	Signals <-chan os.Signal
	// Suspend, when set, is called once a SIGTSTP from Signals has stopped
	// the ranks: the CLI stops its own process there, as Ctrl-Z expects,
	// and the SIGCONT that resumes it comes back through Signals.
	Suspend func()
	// CollName names a collective by its number on the wire, for the
	// job's status (jobstatus.go: SIGUSR1 and hcclrun status); nil
	// prints the number. The CLI passes the runtime's names.
	CollName func(uint8) string
	// Collect, when set, is called once every rank has finished, before
	// the control plane closes, with what each rank put at the control
	// plane's key CollectKey+"<rank>" (nil where it put nothing): how
	// hcclrun --report gathers the ranks' summaries. It runs even when
	// the job failed.
	CollectKey string
	Collect    func(values [][]byte)

	Logger *slog.Logger // nil discards
}

// Host is one machine of a job and the Spawner that starts ranks there.
type Host struct {
	Spawner Spawner
	// Addr is the IP address the host is reached on, written to the rank
	// table as its host_addr and server_id; when it is "" the table has no
	// address for the host and the spawner's Host() is its server_id.
	Addr  string
	Ranks int   // ranks placed on the host, at least 1
	CPUs  []int // CPUs the host's ranks may use; nil leaves them unbound
}

// rankSlot is where one rank runs.
type rankSlot struct {
	id   RankIdentity
	host int // index into the job's hosts
}

// resolved is a validated Job with its defaults applied.
type resolved struct {
	*Job
	hosts  []Host
	slots  []rankSlot
	grace  time.Duration
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger

	// Set by prepare.
	exports []string // resolved -x variables
	env     JobEnv   // shared by every rank, without the table path
	cpus    [][]int  // per rank, the CPUs it is bound to (the table's cpu_list); nil unbound
}

// resolve checks the job description and fills in the defaults. With launch
// set and no Hosts, it creates the LocalSpawner; without it (the ranktable
// command) there is no program and the host has no spawner.
func (j *Job) resolve(launch bool) (*resolved, error) {
	if launch && j.Program == "" {
		return nil, Usagef("no program to run")
	}
	if j.Grace < 0 {
		return nil, Usagef("grace must not be negative, got %v", j.Grace)
	}
	if j.Timeout < 0 {
		return nil, Usagef("timeout must not be negative, got %v", j.Timeout)
	}
	if j.AbortWait < 0 {
		return nil, Usagef("abort wait must not be negative, got %v", j.AbortWait)
	}
	if err := checkRanks(j.NP, j.Hosts); err != nil {
		return nil, err
	}
	r := &resolved{Job: j, hosts: j.Hosts, grace: j.Grace, stdout: j.Stdout, stderr: j.Stderr, log: j.Logger}
	if r.hosts == nil {
		if j.NP < 1 {
			return nil, Usagef("np must be at least 1, got %d", j.NP)
		}
		h := Host{Addr: localHostAddr, Ranks: j.NP}
		if launch {
			h.Spawner = NewLocalSpawner("")
		}
		r.hosts = []Host{h}
	}
	total := 0
	for i, h := range r.hosts {
		if h.Ranks < 1 {
			return nil, Usagef("host %d has %d ranks, want at least 1", i, h.Ranks)
		}
		if launch && h.Spawner == nil {
			return nil, Usagef("host %d has no spawner", i)
		}
		total += h.Ranks
	}
	if j.NP != 0 && j.NP != total {
		return nil, Usagef("np is %d but the hosts hold %d ranks", j.NP, total)
	}
	if err := r.bindHosts(); err != nil {
		return nil, err
	}
	for n, h := range r.hosts {
		for l := 0; l < h.Ranks; l++ {
			r.slots = append(r.slots, rankSlot{host: n, id: RankIdentity{
				Rank: len(r.slots), WorldSize: total,
				LocalRank: l, LocalWorldSize: h.Ranks, NodeRank: n,
			}})
		}
	}
	if r.grace == 0 {
		r.grace = DefaultGrace
	}
	if r.stdout == nil {
		r.stdout = os.Stdout
	}
	if r.stderr == nil {
		r.stderr = os.Stderr
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if launch {
		r.warnCrowded()
	}
	return r, nil
}

// bindHosts gives every host its CPUs under the job's binding policy
// (bind.go), unless the caller set them: this machine's are the launcher's,
// a remote host's those its agent reported. The hosts are copied first: Run
// does not modify the Job.
func (r *resolved) bindHosts() error {
	r.hosts = append([]Host(nil), r.hosts...)
	for i := range r.hosts {
		h := &r.hosts[i]
		if h.CPUs != nil || r.Bind == BindNone {
			continue
		}
		allowed, where, ok, err := r.allowedOn(h)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		cpus, err := bindCPUs(r.Bind, h.Ranks, allowed, where)
		if err != nil {
			return err
		}
		h.CPUs = cpus
	}
	return nil
}

// allowedOn says which CPUs h's ranks may run on: the launcher's own when
// h is this machine, an agent's report for a remote host; where names the
// host. It is not ok when the launcher does not decide: an agent's own
// spawner (its launcher did), an agent that did not say, a spawner of the
// caller's.
func (r *resolved) allowedOn(h *Host) (allowed []int, where string, ok bool, err error) {
	switch sp := h.Spawner.(type) {
	case *LocalSpawner:
		if sp.agent {
			return nil, "", false, nil // an agent's own spawner: its launcher decided
		}
	case *agentSpawner:
		if sp.cpus == nil {
			return nil, "", false, nil // an agent that did not say: unbound
		}
		return sp.cpus, sp.host, true, nil
	case nil:
		if len(r.hosts) > 1 || r.Job.Hosts != nil {
			return nil, "", false, nil
		}
		// the ranktable command's view of a local job
	default:
		return nil, "", false, nil
	}
	allowed, err = allowedCPUs()
	return allowed, "this machine", err == nil, err
}

// rankTable generates the table of the resolved job.
func (r *resolved) rankTable(jobID, controlAddr string) (*ranktable.Table, error) {
	spec := ranktable.Spec{JobID: jobID, ControlAddr: controlAddr, Handoff: r.measureHandoff()}
	for _, h := range r.hosts {
		ss := ranktable.ServerSpec{HostAddr: h.Addr, Ranks: h.Ranks, CPUs: h.CPUs}
		if ss.HostAddr == "" && h.Spawner != nil {
			// No address (HCCL's server_id): the host's name identifies it.
			ss.ID = h.Spawner.Host()
		}
		spec.Servers = append(spec.Servers, ss)
	}
	return ranktable.Generate(spec)
}

// RankTable returns the rank table the job would get, with the given job id
// and control address (either may be empty), without starting anything.
// This is what `hcclrun ranktable` prints.
func (j *Job) RankTable(jobID, controlAddr string) (*ranktable.Table, error) {
	r, err := j.resolve(false)
	if err != nil {
		return nil, err
	}
	return r.rankTable(jobID, controlAddr)
}

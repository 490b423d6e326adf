package runtime

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// The environment hcclrun gives every rank, and the runtime's knobs. This
// file is the only place of the package that reads the environment.

// Job identifies a rank within its job: what Init needs to join.
type Job struct {
	Rank, Size           int
	LocalRank, LocalSize int
	NodeRank             int
	ControlAddr          string // host:port of the launcher's control plane
	JobID                string
	Key                  []byte // per-job secret (HCCL_JOB_KEY)
	RankTableFile        string // may be empty
	// RanksPerServer says that servers hold this many consecutive ranks
	// each, for the hierarchical algorithms; 0 reads the servers from the
	// rank table or, without one, from the hosts the ranks are on
	// (layout.go).
	RanksPerServer int
	// Servers, when set, is the server of each rank (any labels, equal
	// for ranks of one server), overriding RanksPerServer and the table:
	// for tests whose ranks claim servers of different sizes. Every rank
	// must be given the same.
	Servers []int

	host      *controlHost // rank 0 of a job srun started: the control plane it serves (pmi.go)
	controlBy string       // who serves the control plane when not the launcher, e.g. " (rank 0's)"
}

// tunables are the runtime's knobs: HCCL_ALGO, HCCL_BUFFSIZE, ... and the
// options that override them.
type tunables struct {
	Algo         string // HCCL_ALGO, e.g. "ring", "allreduce:rhd;allgather:pat" or HCCL's "level0:NA;level1:H-D_R"
	TuningFile   string // HCCL_TUNING_FILE: cost-model constants (see selector.ParseTuning)
	Debug        string // HCCL_DEBUG: WARN, INFO or TRACE
	SocketIfname string // HCCL_SOCKET_IFNAME
	ShmDisable   bool   // HCCL_SHM_DISABLE=1
	// ShmDirect says which payloads between ranks of one server are read
	// in place from the sender's memory (process_vm_readv, see shmlink's
	// direct.go) instead of going through the shm rings: payloads of 256
	// KiB and more from the caller's send buffer, of the collectives
	// directMode.posts names. HCCL_SHM_DIRECT=1 posts those of every
	// collective, HCCL_SHM_DIRECT=0 (or HCCL_SHM_DIRECT_DISABLE=1) none.
	ShmDirect        directMode
	ShmDirectDisable bool // HCCL_SHM_DIRECT_DISABLE=1, kept for scripts that set it
	// ShmSplice (HCCL_SHM_SPLICE_DISABLE) says whether the heads of
	// payloads read in place go through pipes (shmlink's splice.go): =1
	// reads them with process_vm_readv alone, =0 always through pipes,
	// and unset lets a probe of the host decide (pipesOff).
	ShmSplice spliceMode
	// SocketCongestion is the TCP congestion control of the data links
	// (HCCL_SOCKET_CONGESTION), "" for the kernel's default (the value
	// "system"). Unset, it is cubic: the pacing of bbr, some kernels'
	// default, holds back the bursts a collective sends
	// (docs/measurements.md#cubic-on-the-data-links).
	// SocketCongestionSet says the user chose it: a kernel that refuses
	// it then fails Init instead of keeping its default (congestionFor).
	SocketCongestion    string
	SocketCongestionSet bool
	BuffSize            int           // HCCL_BUFFSIZE (selector.ParseBuffSize): staging bytes per link (0: default)
	ConnectTimeout      time.Duration // HCCL_CONNECT_TIMEOUT: bound of Init
	ExecTimeout         time.Duration // HCCL_EXEC_TIMEOUT: bound of one collective (0: none)
	GraphFuseBytes      int           // HCCL_GRAPH_FUSE_BYTES: a graph's AllReduce bucket cap (0: default, < 0: none; graph.go)
	// ShmSocketTag (HCCL_SHM_SOCKET_TAG) replaces the 128 random bits at
	// the end of the rank's shared-memory socket name,
	// @hcclrun/<job>/<rank>/<tag>. It is for tests that make a name
	// collide: whoever knows the tag can take the name first, and the
	// rank then reaches its peers over TCP (switchboard.go). Unset, the name is
	// unguessable.
	ShmSocketTag string
	// MinChannels and MaxChannels bound the channels of the calls split
	// over several (HCCL_MIN_NCHANNELS, HCCL_MAX_NCHANNELS, or NCCL's
	// spellings; selector.ChannelBounds), 0 where unset.
	MinChannels, MaxChannels int
	// TraceDir (HCCL_TRACE) is where the rank writes its trace
	// (trace.go), "" for none; TraceEvents (HCCL_TRACE_EVENTS) how many
	// events its ring keeps. Report (HCCL_REPORT=1) sends a summary of
	// the rank's calls to the launcher at Close.
	TraceDir    string
	TraceEvents int
	Report      bool
}

// directMode is HCCL_SHM_DIRECT: which collectives hand large payloads
// over in place.
type directMode int

const (
	// directCopied, the default, posts the payloads of the collectives
	// whose receivers only copy what they receive: AllGather, AlltoAll,
	// AlltoAllV and Broadcast. In place the receiver makes one copy where
	// the rings take two (a Broadcast's leaf shares its copy with the
	// root: shmlink's share.go); the reductions stay in the rings, where
	// the receiver reduces straight from shared memory. Which way is
	// faster moves with the host and with whether the sender has just
	// written its payload (docs/measurements.md#which-payloads-go-in-place),
	// so a class of those calls (but AlltoAllV's) called more than
	// postAfter times is timed both ways and goes the faster
	// (posttune.go).
	directCopied directMode = iota
	directAll               // HCCL_SHM_DIRECT=1: every collective
	directNone              // HCCL_SHM_DIRECT=0: none; the links do not even probe
)

// posts reports whether calls of coll hand payloads over in place.
func (m directMode) posts(coll plan.Coll) bool {
	switch m {
	case directAll:
		return true
	case directCopied:
		return coll == plan.AllGather || coll == plan.AlltoAll || coll == plan.AlltoAllV || coll == plan.Broadcast
	}
	return false
}

// shmDirect is the mode in force: HCCL_SHM_DIRECT_DISABLE=1 wins.
func (k tunables) shmDirect() directMode {
	if k.ShmDirectDisable {
		return directNone
	}
	return k.ShmDirect
}

// Defaults when the environment says nothing.
const (
	defaultConnectTimeout = 120 * time.Second
	defaultCongestion     = "cubic"
)

// congestionName is what a TCP congestion control's name may look like
// (the kernel's TCP_CA_NAME_MAX is 16 bytes with its terminating zero).
var congestionName = regexp.MustCompile(`^[a-z0-9_]{1,15}$`)

// socketTag is what HCCL_SHM_SOCKET_TAG may hold: one element of an
// abstract socket name.
var socketTag = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// jobFromEnv reads the rank's identity from the variables hcclrun sets.
func jobFromEnv(getenv func(string) string) (Job, error) {
	var j Job
	var err error
	ints := []struct {
		name string
		dst  *int
		min  int
	}{
		{"HCCL_RANK", &j.Rank, 0},
		{"HCCL_WORLD_SIZE", &j.Size, 1},
		{"HCCL_LOCAL_RANK", &j.LocalRank, 0},
		{"HCCL_LOCAL_WORLD_SIZE", &j.LocalSize, 1},
		{"HCCL_NODE_RANK", &j.NodeRank, 0},
	}
	for _, v := range ints {
		s := getenv(v.name)
		if s == "" {
			return Job{}, fmt.Errorf("%s is not set: start the program with hcclrun (e.g. hcclrun -np 2 ./prog)", v.name)
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < v.min {
			return Job{}, fmt.Errorf("%s=%q: want an integer >= %d", v.name, s, v.min)
		}
		*v.dst = n
	}
	if j.Rank >= j.Size {
		return Job{}, fmt.Errorf("HCCL_RANK=%d is not below HCCL_WORLD_SIZE=%d", j.Rank, j.Size)
	}
	if j.LocalRank >= j.LocalSize {
		return Job{}, fmt.Errorf("HCCL_LOCAL_RANK=%d is not below HCCL_LOCAL_WORLD_SIZE=%d", j.LocalRank, j.LocalSize)
	}
	if j.ControlAddr = getenv("HCCL_CONTROL_ADDR"); j.ControlAddr == "" {
		return Job{}, fmt.Errorf("HCCL_CONTROL_ADDR is not set: start the program with hcclrun")
	}
	j.JobID = getenv("HCCL_JOB_ID")
	if j.Key, err = wire.ParseKey(getenv("HCCL_JOB_KEY")); err != nil {
		return Job{}, fmt.Errorf("HCCL_JOB_KEY: %w", err)
	}
	j.RankTableFile = getenv("HCCL_RANK_TABLE_FILE")
	return j, nil
}

// zeroOrOne sets *dst to ifZero or ifOne when the variable name is 0 or
// 1, leaves it when unset, and refuses anything else.
func zeroOrOne[T any](getenv func(string) string, name string, dst *T, ifZero, ifOne T) error {
	switch s := getenv(name); s {
	case "":
	case "0":
		*dst = ifZero
	case "1":
		*dst = ifOne
	default:
		return fmt.Errorf("%s=%q: want 0 or 1", name, s)
	}
	return nil
}

// knobsFromEnv reads the runtime's tunables.
func knobsFromEnv(getenv func(string) string) (tunables, error) {
	k := tunables{
		Algo:           strings.TrimSpace(getenv("HCCL_ALGO")),
		TuningFile:     strings.TrimSpace(getenv("HCCL_TUNING_FILE")),
		Debug:          strings.ToUpper(strings.TrimSpace(getenv("HCCL_DEBUG"))),
		SocketIfname:   strings.TrimSpace(getenv("HCCL_SOCKET_IFNAME")),
		ConnectTimeout: defaultConnectTimeout,
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{
		{"HCCL_SHM_DISABLE", &k.ShmDisable},
		{"HCCL_SHM_DIRECT_DISABLE", &k.ShmDirectDisable},
	} {
		if err := zeroOrOne(getenv, f.name, f.dst, false, true); err != nil {
			return tunables{}, err
		}
	}
	if err := zeroOrOne(getenv, "HCCL_SHM_SPLICE_DISABLE", &k.ShmSplice, spliceOn, spliceOff); err != nil {
		return tunables{}, err
	}
	if err := zeroOrOne(getenv, "HCCL_SHM_DIRECT", &k.ShmDirect, directNone, directAll); err != nil {
		return tunables{}, err
	}
	switch s := strings.TrimSpace(getenv("HCCL_SOCKET_CONGESTION")); {
	case s == "":
		k.SocketCongestion = defaultCongestion
	case s == "system":
		k.SocketCongestionSet = true
	case congestionName.MatchString(s):
		k.SocketCongestion, k.SocketCongestionSet = s, true
	default:
		return tunables{}, fmt.Errorf("HCCL_SOCKET_CONGESTION=%q: want a congestion control of the kernel (e.g. cubic, reno, bbr) or system", s)
	}
	if s := getenv("HCCL_SHM_SOCKET_TAG"); s != "" {
		if !socketTag.MatchString(s) {
			return tunables{}, fmt.Errorf("HCCL_SHM_SOCKET_TAG=%q: want 1 to 64 letters, digits, '-' or '_'", s)
		}
		k.ShmSocketTag = s
	}
	var err error
	if k.MinChannels, k.MaxChannels, err = selector.ChannelBounds(getenv); err != nil {
		return tunables{}, err
	}
	if s := getenv("HCCL_BUFFSIZE"); s != "" {
		n, err := selector.ParseBuffSize(s)
		if err != nil {
			return tunables{}, err
		}
		k.BuffSize = int(n)
	}
	if s := getenv("HCCL_GRAPH_FUSE_BYTES"); s != "" {
		// Bytes, as the name says (25M, 1048576); 0 fuses nothing.
		n, err := selector.ParseBytes(s)
		if err != nil || n > 1<<40 {
			return tunables{}, fmt.Errorf("HCCL_GRAPH_FUSE_BYTES=%q: want a byte count such as 25M or 1048576, 0 for no fusion", s)
		}
		k.GraphFuseBytes = int(n)
		if n == 0 {
			k.GraphFuseBytes = -1
		}
	}
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{"HCCL_CONNECT_TIMEOUT", &k.ConnectTimeout}, {"HCCL_EXEC_TIMEOUT", &k.ExecTimeout}} {
		s := getenv(v.name)
		if s == "" {
			continue
		}
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || secs < 0 {
			return tunables{}, fmt.Errorf("%s=%q: want seconds (e.g. 30)", v.name, s)
		}
		*v.dst = time.Duration(secs * float64(time.Second))
	}
	k.TraceDir, k.TraceEvents = strings.TrimSpace(getenv("HCCL_TRACE")), defaultTraceEvents
	if s := strings.TrimSpace(getenv("HCCL_TRACE_EVENTS")); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxTraceEvents {
			return tunables{}, fmt.Errorf("HCCL_TRACE_EVENTS=%q: want a count of events from 1 to %d", s, maxTraceEvents)
		}
		k.TraceEvents = n
	}
	if err := zeroOrOne(getenv, "HCCL_REPORT", &k.Report, false, true); err != nil {
		return tunables{}, err
	}
	switch k.Debug {
	case "", "WARN", "INFO", "TRACE":
	default:
		return tunables{}, fmt.Errorf("HCCL_DEBUG=%q: want WARN, INFO or TRACE", k.Debug)
	}
	return k, nil
}

// osGetenv is os.Getenv, named so that the one reader of the process
// environment is visible here.
var osGetenv = os.Getenv

// pmiTask is what srun --mpi=pmi2 gives each task: the socket to its
// slurmstepd (PMI_FD), its rank (PMI_RANK), and the Slurm job and step,
// for the job's id.
type pmiTask struct {
	fd, rank  int
	pmiJob    string // PMI_JOBID
	slurmJob  string // SLURM_JOB_ID
	slurmStep string // SLURM_STEP_ID
}

// pmiFromEnv reports whether this process was started by srun rather than
// hcclrun (no HCCL_RANK): with PMI_FD it is a PMI-2 task; without, srun ran
// it with no PMI plugin, which is an error that says what to do.
func pmiFromEnv(getenv func(string) string) (pmiTask, bool, error) {
	if getenv("HCCL_RANK") != "" {
		return pmiTask{}, false, nil
	}
	fd := getenv("PMI_FD")
	if fd == "" {
		if getenv("SLURM_STEP_ID") != "" && getenv("SLURM_PROCID") != "" {
			return pmiTask{}, true, fmt.Errorf("started by srun without PMI-2 (PMI_FD is not set): run srun --mpi=pmi2 ...; " +
				"if srun --mpi=list does not offer pmi2, this Slurm lacks its mpi/pmi2 plugin: run hcclrun inside salloc or sbatch instead")
		}
		return pmiTask{}, false, nil
	}
	t := pmiTask{pmiJob: getenv("PMI_JOBID"), slurmJob: getenv("SLURM_JOB_ID"), slurmStep: getenv("SLURM_STEP_ID")}
	var err error
	if t.fd, err = strconv.Atoi(fd); err != nil || t.fd < 0 {
		return pmiTask{}, true, fmt.Errorf("PMI_FD=%q: want a file descriptor", fd)
	}
	t.rank = -1
	if s := getenv("PMI_RANK"); s != "" {
		if t.rank, err = strconv.Atoi(s); err != nil || t.rank < 0 {
			return pmiTask{}, true, fmt.Errorf("PMI_RANK=%q: want an integer >= 0", s)
		}
	}
	return t, true, nil
}

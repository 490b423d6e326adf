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
	// each, for the hierarchical algorithms; 0 reads it from the rank
	// table (or, without one, treats the job as one server).
	RanksPerServer int
}

// tunables are the runtime's knobs: HCCL_ALGO, HCCL_BUFFSIZE, ... and the
// options that override them.
type tunables struct {
	Algo         string // HCCL_ALGO, e.g. "ring" or "allreduce:rhd;allgather:pat"
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
	// and unset lets a probe of the host decide (splice.go). That probe
	// sets two kernel paths side by side and keeps the fastest try of
	// each, where directMode's dropped one set a kernel copy against a
	// user-space one and flipped between jobs. Choosing per link by
	// timing the job's transfers decided too late or wrongly
	// (docs/performance.md).
	ShmSplice spliceMode
	// SocketCongestion is the TCP congestion control of the data links
	// (HCCL_SOCKET_CONGESTION), "" for the kernel's default (the value
	// "system"). Unset, it is cubic: the kernel's default on these
	// machines is bbr, whose pacing holds back the bursts a collective
	// sends. Measured on the Intel host of 2026-12-04, np 2 over loopback
	// TCP, 1 MiB, two runs each: AllReduce 415-482 us with bbr, 253-261
	// with cubic; Broadcast 158-202 against 97-101; Open MPI 365-370
	// and 114-127 with bbr, 292-301 and 113-128 with cubic.
	// SocketCongestionSet says the user chose it: a kernel that refuses
	// it then fails Init instead of keeping its default (congestion.go).
	SocketCongestion    string
	SocketCongestionSet bool
	BuffSize            int           // HCCL_BUFFSIZE: staging bytes per link (0: default)
	ConnectTimeout      time.Duration // HCCL_CONNECT_TIMEOUT: bound of Init
	ExecTimeout         time.Duration // HCCL_EXEC_TIMEOUT: bound of one collective (0: none)
	// ShmSocketTag (HCCL_SHM_SOCKET_TAG) replaces the 128 random bits at
	// the end of the rank's shared-memory socket name,
	// @hcclrun/<job>/<rank>/<tag>. It is for tests that make a name
	// collide: whoever knows the tag can take the name first, and the
	// rank then reaches its peers over TCP (links.go). Unset, the name is
	// unguessable.
	ShmSocketTag string
}

// directMode is HCCL_SHM_DIRECT: which collectives hand large payloads
// over in place.
type directMode int

const (
	// directCopied, the default, posts the payloads of the collectives
	// whose receivers only copy what they receive: AllGather, AlltoAll,
	// AlltoAllV and Broadcast. A class of those calls (but AlltoAllV's)
	// called more than postAfter times is then timed both ways and goes
	// the faster (posttune.go): which wins depends on the host and on
	// whether the sender has just written its payload, and the figures
	// below, all measured with buffers written once, disagreed between
	// hosts.
	//
	// In the first three every rank sends and receives at once, so that
	// through the rings each rank copies twice (its send in, its receive
	// out) and in place once (the kernel copies from the peer straight
	// into the destination). Measured on the KVM machine of 2026-12-02
	// (np 2, interleaved runs, medians out of place, in its slower
	// placement; see docs/performance.md): AllGather 1 MiB 38.0 against
	// 27.9 us in place, 4 MiB 173 against 136, AlltoAll 1 MiB 39.1
	// against 27.8, AlltoAllV 1 MiB 48.2 against 31.9; in its faster
	// placement as fast either way. On the PVM machine of 2026-12-02 the
	// rings won by 10-15%: set HCCL_SHM_DIRECT=0 on such a machine.
	// hcclrun no longer decides that by timing the host (a
	// process_vm_readv of 256 KiB against a user-space copy): the ratio
	// it read spread over 1.6 to 4.5 on this machine, around the PVM
	// machine's 4.1, so jobs in a row flipped between the two ways and
	// the benchmarks with them. Which is faster moves with this
	// machine's state: at 1 MiB in place won AllGather in three
	// interleaved series of 6-8 runs and AlltoAll in two of them; at 16
	// MiB the rings won AllGather in two and AlltoAll in all three, by
	// 3-9% (docs/performance.md, 2026-12-03 evening). Since the heads of
	// the payloads go through a pipe (shmlink's splice.go) in place wins
	// at 1 to 8 MiB (interleaved series: AllGather 1 MiB 52 against 59
	// us, 8 MiB 830 against 1070, AlltoAll 4 MiB 280 against 376) and 16
	// MiB still goes either way.
	//
	// A Broadcast's root only sends and its leaf only receives, so the
	// rings' two copies run at once, and read in place by the leaf alone
	// it lost (KVM machine, 1 MiB 29.7 against 31.2 us, 4 MiB 116
	// against 122; the Intel host, with a root that writes its buffer
	// before each call and a leaf that reads the result after it, 80-81
	// against 63-66). Since the leaf shares the copy with the root
	// (shmlink's share.go) both cores copy, and in place wins: the
	// Intel host of 2026-12-05, np 2, the same program (medians of 200
	// calls, four interleaved runs, noisy minutes), 1 MiB 61-151 us
	// against the rings' 127-208 (in place without the share 166-316),
	// 4 MiB 420-584 against 544-897.
	//
	// The reductions stay in the rings, where the receiver reduces
	// straight from shared memory instead of first copying the payload
	// out (AllReduce 1 MiB 59.8 against 79.0, Reduce 1 MiB 34.1 against
	// 56.9, the KVM machine); in place they lost by 1.05 to 2.3 times.
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
	if s := getenv("HCCL_BUFFSIZE"); s != "" {
		n, err := selector.ParseBytes(s)
		if err != nil || n < 4096 || n > 1<<30 {
			return tunables{}, fmt.Errorf("HCCL_BUFFSIZE=%q: want a byte count from 4096 to 1G (e.g. 4194304, 4M)", s)
		}
		k.BuffSize = int(n)
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

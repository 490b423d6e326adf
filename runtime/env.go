package runtime

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hcclrun/hcclrun/netio"
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

// Knobs are the runtime's tunables (HCCL_ALGO, HCCL_BUFFSIZE, ...).
type Knobs struct {
	Algo         string // HCCL_ALGO, e.g. "ring" or "allreduce:rhd;allgather:pat"
	TuningFile   string // HCCL_TUNING_FILE: cost-model constants (see selector.ParseTuning)
	Debug        string // HCCL_DEBUG: WARN, INFO or TRACE
	SocketIfname string // HCCL_SOCKET_IFNAME
	ShmDisable   bool   // HCCL_SHM_DISABLE=1
	// HCCL_SHM_DIRECT=1: large payloads (256 KiB to 4 MiB, from the send
	// buffer) between ranks of one server are read in place from the
	// sender's memory (process_vm_readv, see shmlink's direct.go) instead
	// of going through the shm rings. Off by default: since the rings copy
	// with REP MOVSB (shm/copy.go) they are faster at every size on the
	// project's machine (np 2, ring against in place, four interleaved
	// runs each, medians out of place: AllReduce 1 MiB 79 against 135 us,
	// AllGather 1 MiB 35 against 48, Broadcast 1 MiB 33 against 72,
	// ReduceScatter 1 MiB 45 against 75; three runs each at 256 KiB and
	// 4 MiB: as fast or faster too, Broadcast 4 MiB 108 against 268).
	ShmDirect bool
	// HCCL_SHM_DIRECT_DISABLE=1 keeps payloads out of in-place reads
	// whatever HCCL_SHM_DIRECT says (the default since HCCL_SHM_DIRECT).
	ShmDirectDisable bool
	BuffSize         int           // HCCL_BUFFSIZE: staging bytes per link (0: default)
	ConnectTimeout   time.Duration // HCCL_CONNECT_TIMEOUT: bound of Init
	ExecTimeout      time.Duration // HCCL_EXEC_TIMEOUT: bound of one collective (0: none)
}

// readsDirect says whether shm links read large payloads in place.
func (k Knobs) readsDirect() bool { return k.ShmDirect && !k.ShmDirectDisable }

// Defaults when the environment says nothing.
const (
	defaultConnectTimeout = 120 * time.Second
)

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
	if j.Key, err = netio.ParseKey(getenv("HCCL_JOB_KEY")); err != nil {
		return Job{}, fmt.Errorf("HCCL_JOB_KEY: %w", err)
	}
	j.RankTableFile = getenv("HCCL_RANK_TABLE_FILE")
	return j, nil
}

// knobsFromEnv reads the runtime's tunables.
func knobsFromEnv(getenv func(string) string) (Knobs, error) {
	k := Knobs{
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
		{"HCCL_SHM_DIRECT", &k.ShmDirect},
		{"HCCL_SHM_DIRECT_DISABLE", &k.ShmDirectDisable},
	} {
		switch s := getenv(f.name); s {
		case "", "0":
		case "1":
			*f.dst = true
		default:
			return Knobs{}, fmt.Errorf("%s=%q: want 0 or 1", f.name, s)
		}
	}
	if s := getenv("HCCL_BUFFSIZE"); s != "" {
		n, err := selector.ParseBytes(s)
		if err != nil || n < 4096 || n > 1<<30 {
			return Knobs{}, fmt.Errorf("HCCL_BUFFSIZE=%q: want a byte count from 4096 to 1G (e.g. 4194304, 4M)", s)
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
			return Knobs{}, fmt.Errorf("%s=%q: want seconds (e.g. 30)", v.name, s)
		}
		*v.dst = time.Duration(secs * float64(time.Second))
	}
	switch k.Debug {
	case "", "WARN", "INFO", "TRACE":
	default:
		return Knobs{}, fmt.Errorf("HCCL_DEBUG=%q: want WARN, INFO or TRACE", k.Debug)
	}
	return k, nil
}

// osGetenv is os.Getenv, named so that the one reader of the process
// environment is visible here.
var osGetenv = os.Getenv

package launcher

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hcclrun/hcclrun/netio/control"
)

// Names of the variables every rank gets (DESIGN.md, "Environment of every
// rank"). The HCCL_ names are ours; the others are the names torchrun, Open
// MPI and HCCL/MindSpore programs already read, so existing scripts run
// unchanged.
const (
	EnvRank           = "HCCL_RANK"
	EnvWorldSize      = "HCCL_WORLD_SIZE"
	EnvLocalRank      = "HCCL_LOCAL_RANK"
	EnvLocalWorldSize = "HCCL_LOCAL_WORLD_SIZE"
	EnvNodeRank       = "HCCL_NODE_RANK"
	EnvRankTableFile  = "HCCL_RANK_TABLE_FILE"
	EnvControlAddr    = "HCCL_CONTROL_ADDR"
	EnvJobID          = "HCCL_JOB_ID"
	EnvJobKey         = "HCCL_JOB_KEY" // the secret: never print or log it
)

// EnvHeartbeatTimeout is the one variable the launcher reads for itself:
// how long a side of the control plane may be silent, in seconds, before
// the other declares it lost (control.ServerConfig.LostAfter; the server
// passes it on to every rank).
const EnvHeartbeatTimeout = "HCCL_HEARTBEAT_TIMEOUT"

// maxHeartbeatTimeout bounds HCCL_HEARTBEAT_TIMEOUT: the wire carries it
// in 32-bit milliseconds, and a day is already longer than anyone waits
// for a frozen rank.
const maxHeartbeatTimeout = 24 * time.Hour

// heartbeatTimeout returns HCCL_HEARTBEAT_TIMEOUT as the ranks see it: the
// value of the last -x entry that sets it (exports, resolved), else the
// launcher's own (lookup); 0, the control plane's default, when neither
// does. It is seconds, as HCCL_EXEC_TIMEOUT and HCCL_CONNECT_TIMEOUT are,
// and must exceed the heartbeat interval: anything else is a usage error.
func heartbeatTimeout(exports []string, lookup func(string) (string, bool)) (time.Duration, error) {
	s, _ := lookup(EnvHeartbeatTimeout)
	for _, kv := range exports {
		if name, value, _ := strings.Cut(kv, "="); name == EnvHeartbeatTimeout {
			s = value
		}
	}
	if s == "" {
		return 0, nil
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	d := time.Duration(secs * float64(time.Second))
	if err != nil || math.IsNaN(secs) || secs > maxHeartbeatTimeout.Seconds() || d <= control.DefaultHeartbeatInterval {
		return 0, Usagef("%s=%q: want seconds above %g (the heartbeat interval) and at most %g, e.g. 10",
			EnvHeartbeatTimeout, s, control.DefaultHeartbeatInterval.Seconds(), maxHeartbeatTimeout.Seconds())
	}
	return d, nil
}

// RankIdentity is where one rank sits in its job.
type RankIdentity struct {
	Rank, WorldSize           int
	LocalRank, LocalWorldSize int
	NodeRank                  int
}

// JobEnv is what every rank of a job shares.
type JobEnv struct {
	RankTableFile string // path of the rank table as the rank's host sees it
	ControlAddr   string // host:port of the control plane
	JobID         string
	JobKey        string // hex, from wire.EncodeKey
	Nodes         int    // hosts of the job (torchrun's GROUP_WORLD_SIZE)
	// MasterAddr and MasterPort are torchrun's MASTER_ADDR and
	// MASTER_PORT (torchrun.go).
	MasterAddr string
	MasterPort int
}

// RankEnv returns the variables of DESIGN.md for one rank, as "NAME=value".
func RankEnv(id RankIdentity, job JobEnv) []string {
	rank, size := strconv.Itoa(id.Rank), strconv.Itoa(id.WorldSize)
	lrank, lsize := strconv.Itoa(id.LocalRank), strconv.Itoa(id.LocalWorldSize)
	return []string{
		EnvRank + "=" + rank,
		EnvWorldSize + "=" + size,
		EnvLocalRank + "=" + lrank,
		EnvLocalWorldSize + "=" + lsize,
		EnvNodeRank + "=" + strconv.Itoa(id.NodeRank),
		EnvRankTableFile + "=" + job.RankTableFile,
		EnvControlAddr + "=" + job.ControlAddr,
		EnvJobID + "=" + job.JobID,
		EnvJobKey + "=" + job.JobKey,
		// torchrun (MASTER_ADDR and MASTER_PORT: MasterEnv)
		"RANK=" + rank,
		"WORLD_SIZE=" + size,
		"LOCAL_RANK=" + lrank,
		"LOCAL_WORLD_SIZE=" + lsize,
		"GROUP_RANK=" + strconv.Itoa(id.NodeRank),
		"GROUP_WORLD_SIZE=" + strconv.Itoa(job.Nodes),
		"ROLE_NAME=default",
		"ROLE_RANK=" + rank,
		"ROLE_WORLD_SIZE=" + size,
		"TORCHELASTIC_RUN_ID=" + job.JobID,
		"TORCHELASTIC_RESTART_COUNT=0",
		"TORCHELASTIC_MAX_RESTARTS=0",
		// Open MPI
		"OMPI_COMM_WORLD_RANK=" + rank,
		"OMPI_COMM_WORLD_SIZE=" + size,
		"OMPI_COMM_WORLD_LOCAL_RANK=" + lrank,
		"OMPI_COMM_WORLD_LOCAL_SIZE=" + lsize,
		// HCCL / MindSpore
		"RANK_ID=" + rank,
		"RANK_SIZE=" + size,
		"RANK_TABLE_FILE=" + job.RankTableFile,
	}
}

// ExportEnv resolves -x entries: "NAME=value" sets NAME, a bare "NAME" passes
// the launcher's own value on (lookup is os.LookupEnv or a stand-in). A bare
// name that is not set is skipped and reported in missing, as Open MPI
// warns rather than fails. A malformed entry is a usage error.
func ExportEnv(entries []string, lookup func(string) (string, bool)) (env, missing []string, err error) {
	for _, e := range entries {
		name, value, hasValue := strings.Cut(e, "=")
		if !validEnvName(name) {
			return nil, nil, Usagef("-x %q: not a variable name", e)
		}
		if !hasValue {
			v, ok := lookup(name)
			if !ok {
				missing = append(missing, name)
				continue
			}
			value = v
		}
		env = append(env, name+"="+value)
	}
	return env, missing, nil
}

// validEnvName accepts what a POSIX shell would export: a letter or
// underscore, then letters, digits and underscores.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// mergeEnv returns base with overrides applied: a variable keeps the
// position of its first appearance and the value of its last.
func mergeEnv(base, overrides []string) []string {
	out := make([]string, 0, len(base)+len(overrides))
	index := make(map[string]int, len(base)+len(overrides))
	for _, list := range [][]string{base, overrides} {
		for _, kv := range list {
			name, _, _ := strings.Cut(kv, "=")
			if i, ok := index[name]; ok {
				out[i] = kv
				continue
			}
			index[name] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

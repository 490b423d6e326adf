package trace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

// Version is the version of the rank files this package writes; ReadFile
// refuses others.
const Version = 1

// File is what one rank writes to HCCL_TRACE's directory for one
// communicator, rank-<rank>.json (rank-<rank>.comm-<id>.json for a Split
// child's).
type File struct {
	Version   int    `json:"version"`
	JobID     string `json:"job_id"`
	Rank      int    `json:"rank"`
	Size      int    `json:"size"`
	LocalRank int    `json:"local_rank"`
	NodeRank  int    `json:"node_rank"`
	Host      string `json:"host"`
	PID       int    `json:"pid"`
	// Comm names a communicator made by Split ("" for the job's), in
	// which the rank is CommRank of CommSize; Rank, Size and the ops'
	// peers stay the job's.
	Comm     string `json:"comm,omitempty"`
	CommRank int    `json:"comm_rank,omitempty"`
	CommSize int    `json:"comm_size,omitempty"`
	// Epoch is the wall-clock time, Unix nanoseconds, from which the
	// events' times count (the rank's monotonic clock).
	Epoch int64 `json:"epoch_unix_ns"`
	// Clock is the rank's clock against the control plane's, measured
	// when tracing started; ClockEnd when the file was written (drift).
	Clock    Clock  `json:"clock"`
	ClockEnd *Clock `json:"clock_end,omitempty"`
	// TicksErrorNs bounds, in ns, the error of placing the times read in
	// the time-stamp counter's ticks (executor.TraceNow) on the rank's
	// clock: the larger of the two calibrations' (Line); 0 when they were
	// read in ns.
	TicksErrorNs int64 `json:"ticks_error_ns,omitempty"`
	// Written says what wrote the file: "close", "failure" or
	// "signal SIGTERM".
	Written string `json:"written"`
	// Dropped is how many events the ring overwrote (HCCL_TRACE_EVENTS
	// bounds it): the oldest calls are missing.
	Dropped uint64 `json:"dropped"`
	// Transports names the transport of every peer the rank had a link
	// to, "shm" or "tcp", by peer.
	Transports map[string]string `json:"transports,omitempty"`
	Calls      []Call            `json:"calls"`
	Ops        []Op              `json:"ops"`
}

// Clock is a rank's clock offset against the control plane's: a time t of
// the rank's is t+OffsetNs on the launcher's, within ±ErrorNs.
type Clock struct {
	OffsetNs int64 `json:"offset_ns"`
	ErrorNs  int64 `json:"error_ns"`
}

// Call is one collective.
type Call struct {
	Seq     uint64 `json:"seq"`
	Coll    string `json:"coll"`
	DType   string `json:"dtype,omitempty"`
	Bytes   int64  `json:"bytes"`
	Algo    string `json:"algo"`
	Why     string `json:"why,omitempty"`
	PredNs  int64  `json:"predicted_ns,omitempty"`
	StartNs int64  `json:"start_ns"`
	EndNs   int64  `json:"end_ns"`
}

// Op is one op of a step of a call.
type Op struct {
	Seq     uint64 `json:"seq"`
	Coll    string `json:"coll"`
	Step    int    `json:"step"`
	Op      string `json:"op"`
	Peer    int    `json:"peer"` // -1: local
	Channel int    `json:"channel,omitempty"`
	Bytes   int64  `json:"bytes"`
	StartNs int64  `json:"start_ns"`
	EndNs   int64  `json:"end_ns"`
	WaitNs  int64  `json:"wait_ns,omitempty"`
}

// Fill converts events into f's Calls and Ops, with the names and the
// templates their ring numbered, their times placed by line; a KindPair
// event becomes its call and its template's ops.
func (f *File) Fill(events []Event, names []Names, templates [][]PairOp, line Line) {
	f.Calls, f.Ops = f.Calls[:0], f.Ops[:0]
	for i := range events {
		e := &events[i]
		coll := plan.Coll(e.Coll).String()
		switch e.Kind {
		case KindPair:
			if e.Peer >= 0 && int(e.Peer) < len(templates) {
				start, end := line.At(e.Start), line.At(e.End)
				for _, o := range templates[e.Peer] {
					op := Op{Seq: e.Seq, Coll: coll, Step: int(o.Step), Op: plan.Kind(o.Op).String(), Peer: int(o.Peer),
						Bytes: o.Bytes, StartNs: start, EndNs: start}
					switch o.When {
					case AtEnd:
						op.StartNs = end
						op.EndNs = end
					case Waited:
						op.EndNs, op.WaitNs = end, end-start
					}
					f.Ops = append(f.Ops, op)
				}
			}
			fallthrough
		case KindCall:
			c := Call{Seq: e.Seq, Coll: coll, Bytes: e.Bytes, PredNs: e.Extra, StartNs: line.At(e.Start), EndNs: line.At(e.End)}
			if int(e.Name) < len(names) {
				c.Algo, c.Why = names[e.Name].Algo, names[e.Name].Why
			}
			if e.Coll != uint8(plan.Barrier) {
				c.DType = reduce.DType(e.DType).String()
			}
			f.Calls = append(f.Calls, c)
		case KindOp:
			f.Ops = append(f.Ops, Op{Seq: e.Seq, Coll: coll, Step: int(e.Step), Op: plan.Kind(e.Op).String(),
				Peer: int(e.Peer), Channel: int(e.Channel), Bytes: e.Bytes, StartNs: line.At(e.Start), EndNs: line.At(e.End), WaitNs: line.Dur(e.Extra)})
		}
	}
}

// FileName is the name of rank's file in a trace directory.
func FileName(rank int) string { return "rank-" + strconv.Itoa(rank) + ".json" }

// name is f's name in a trace directory: FileName, or for a Split
// child's, rank-<rank>.comm-<id>.json.
func (f *File) name() string {
	if f.Comm == "" {
		return FileName(f.Rank)
	}
	return "rank-" + strconv.Itoa(f.Rank) + ".comm-" + f.Comm + ".json"
}

// WriteFile writes f to dir under its name (FileName), through a temporary file
// renamed into place, so that a reader never sees half a file and a
// later write (Close after a failure) replaces an earlier one whole.
func WriteFile(dir string, f *File) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, f.name())
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadFile reads one rank's file.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Version != Version {
		return nil, fmt.Errorf("%s: trace file version %d, this hcclrun reads %d", path, f.Version, Version)
	}
	return &f, nil
}

// commSuffix names communicator comm after a rank in messages.
func commSuffix(comm string) string {
	if comm == "" {
		return ""
	}
	return " of communicator " + comm
}

// ReadDir reads every rank file of a trace directory (the job's
// communicator's and its Split children's), in rank order.
func ReadDir(dir string) ([]*File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "rank-*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%s: no rank-*.json trace files", dir)
	}
	files := make([]*File, 0, len(paths))
	type rankComm struct {
		rank int
		comm string
	}
	seen := map[rankComm]string{}
	for _, p := range paths {
		f, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[rankComm{f.Rank, f.Comm}]; dup {
			return nil, fmt.Errorf("%s and %s both hold rank %d%s", prev, p, f.Rank, commSuffix(f.Comm))
		}
		seen[rankComm{f.Rank, f.Comm}] = p
		files = append(files, f)
	}
	sortFiles(files)
	return files, nil
}

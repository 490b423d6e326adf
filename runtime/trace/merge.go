package trace

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// A merged timeline is Chrome's Trace Event Format (JSON object form),
// which Perfetto (ui.perfetto.dev) and chrome://tracing open:
//
//   - one process per host (pid = the host's node rank plus one), named
//     after the host;
//   - one thread, i.e. one track, per rank (tid = rank plus one), named
//     "rank R", and under it one per communicator the rank made by Split
//     that traced calls, named "rank R comm ID (r of n)";
//   - on a rank's track, nested complete ("X") events: each call (name
//     the collective, args its number, bytes, type, algorithm and why),
//     inside it each plan step ("step S": its ops in args, with peer,
//     transport and bytes), and inside a step, where the rank waited for
//     a peer's first frame, "wait rank P".
//
// Ops of one step run at once and overlap, which a track cannot nest, so
// they are listed in the step's args rather than drawn; the wait drawn
// is the step's longest. Only channel 0's steps are drawn: a call's other
// channels run beside it (their ops stay in the rank files).
//
// Times are microseconds on the launcher's clock (each rank's Epoch
// plus its Clock offset) from the job's first event; metadata.clocks
// holds every rank's offset and error bar.

// Chrome is a merged timeline.
type Chrome struct {
	TraceEvents     []ChromeEvent  `json:"traceEvents"`
	DisplayTimeUnit string         `json:"displayTimeUnit"`
	Metadata        map[string]any `json:"metadata"`
}

// ChromeEvent is one event of the Trace Event Format.
type ChromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// RankClock is a rank's entry of the merged timeline's metadata.clocks.
type RankClock struct {
	Rank     int    `json:"rank"`
	Comm     string `json:"comm,omitempty"`
	Host     string `json:"host"`
	OffsetNs int64  `json:"offset_ns"`
	ErrorNs  int64  `json:"error_ns"`
	Dropped  uint64 `json:"dropped_events"`
	Written  string `json:"written"`
}

// sortFiles orders files by rank, the job's communicator's first.
func sortFiles(files []*File) {
	slices.SortFunc(files, func(a, b *File) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Comm, b.Comm))
	})
}

// commTracks numbers the communicators of files for their tracks: 0 for
// the job's, then the children's in the order of their names.
func commTracks(files []*File) map[string]int {
	var names []string
	for _, f := range files {
		if f.Comm != "" && !slices.Contains(names, f.Comm) {
			names = append(names, f.Comm)
		}
	}
	slices.Sort(names)
	tracks := map[string]int{"": 0}
	for i, n := range names {
		tracks[n] = i + 1
	}
	return tracks
}

// maxRanks spaces the tracks of one rank's communicators in tids.
const maxRanks = 1 << 20

// Merge builds the job's timeline from its ranks' files.
func Merge(files []*File) (*Chrome, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("trace: nothing to merge")
	}
	sortFiles(files)
	job := files[0].JobID
	for _, f := range files[1:] {
		if f.JobID != job {
			return nil, fmt.Errorf("trace: rank %d is of job %q, rank %d of job %q", files[0].Rank, job, f.Rank, f.JobID)
		}
	}
	// Every rank's times as the launcher's Unix nanoseconds; the origin
	// is the earliest.
	base := func(f *File) int64 { return f.Epoch + f.Clock.OffsetNs }
	origin := int64(0)
	first := true
	for _, f := range files {
		for _, c := range f.Calls {
			if t := base(f) + c.StartNs; first || t < origin {
				origin, first = t, false
			}
		}
	}
	us := func(f *File, ns int64) float64 { return float64(base(f)+ns-origin) / 1e3 }

	out := &Chrome{DisplayTimeUnit: "ns", Metadata: map[string]any{"job_id": job, "origin_unix_ns": origin}}
	var clocks []RankClock
	hosts := map[int]bool{}
	tracks := commTracks(files)
	for _, f := range files {
		k := tracks[f.Comm]
		pid, tid := f.NodeRank+1, k*maxRanks+f.Rank+1
		name := "rank " + strconv.Itoa(f.Rank)
		if f.Comm != "" {
			name += fmt.Sprintf(" comm %s (%d of %d)", f.Comm, f.CommRank, f.CommSize)
		}
		if !hosts[pid] {
			hosts[pid] = true
			out.TraceEvents = append(out.TraceEvents,
				ChromeEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": fmt.Sprintf("host %s (node %d)", f.Host, f.NodeRank)}},
				ChromeEvent{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": f.NodeRank}})
		}
		out.TraceEvents = append(out.TraceEvents,
			ChromeEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": name}},
			ChromeEvent{Name: "thread_sort_index", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"sort_index": f.Rank*len(tracks) + k}})
		clocks = append(clocks, RankClock{Rank: f.Rank, Comm: f.Comm, Host: f.Host, OffsetNs: f.Clock.OffsetNs, ErrorNs: f.Clock.ErrorNs, Dropped: f.Dropped, Written: f.Written})

		steps := stepsOf(f)
		for _, c := range f.Calls {
			args := map[string]any{"seq": c.Seq, "bytes": c.Bytes, "algo": c.Algo}
			if c.DType != "" {
				args["dtype"] = c.DType
			}
			if c.Why != "" {
				args["why"] = c.Why
			}
			if c.PredNs > 0 {
				args["predicted_us"] = float64(c.PredNs) / 1e3
			}
			out.TraceEvents = append(out.TraceEvents, ChromeEvent{Name: c.Coll, Cat: "call", Ph: "X",
				Ts: us(f, c.StartNs), Dur: float64(c.EndNs-c.StartNs) / 1e3, Pid: pid, Tid: tid, Args: args})
			for _, s := range steps[c.Seq] {
				if s.channel > 0 {
					continue // runs beside channel 0's steps: a track cannot nest it
				}
				out.TraceEvents = append(out.TraceEvents, s.events(f, us, pid, tid)...)
			}
		}
	}
	out.Metadata["clocks"] = clocks
	return out, nil
}

// step is the ops of one step of one call of a rank, on one channel.
type step struct {
	index, channel int
	ops            []Op
	start, end     int64
}

// stepsOf groups a rank's ops by call and step. Ops of calls whose call
// event the ring dropped are left out with them.
func stepsOf(f *File) map[uint64][]*step {
	byCall := map[uint64][]*step{}
	for _, o := range f.Ops {
		ss := byCall[o.Seq]
		var s *step
		for _, x := range ss {
			if x.index == o.Step && x.channel == o.Channel {
				s = x
				break
			}
		}
		if s == nil {
			s = &step{index: o.Step, channel: o.Channel, start: o.StartNs, end: o.EndNs}
			byCall[o.Seq] = append(ss, s)
		}
		s.ops = append(s.ops, o)
		s.start, s.end = min(s.start, o.StartNs), max(s.end, o.EndNs)
	}
	return byCall
}

func (s *step) events(f *File, us func(*File, int64) float64, pid, tid int) []ChromeEvent {
	ops := make([]string, len(s.ops))
	var longest *Op
	for i := range s.ops {
		o := &s.ops[i]
		desc := fmt.Sprintf("%s %dB", o.Op, o.Bytes)
		if o.Peer >= 0 {
			arrow := "->"
			if o.Op != "Send" {
				arrow = "<-"
			}
			desc = fmt.Sprintf("%s %s rank %d %dB", o.Op, arrow, o.Peer, o.Bytes)
			if tr := f.Transports[strconv.Itoa(o.Peer)]; tr != "" {
				desc += " " + tr
			}
		}
		if o.WaitNs > 0 {
			desc += fmt.Sprintf(" waited %.1fus", float64(o.WaitNs)/1e3)
			if longest == nil || o.WaitNs > longest.WaitNs {
				longest = o
			}
		}
		ops[i] = desc
	}
	args := map[string]any{"ops": ops}
	ev := []ChromeEvent{{Name: "step " + strconv.Itoa(s.index), Cat: "step", Ph: "X", Ts: us(f, s.start), Dur: float64(s.end-s.start) / 1e3, Pid: pid, Tid: tid, Args: args}}
	if longest != nil {
		ev = append(ev, ChromeEvent{Name: "wait rank " + strconv.Itoa(longest.Peer), Cat: "wait", Ph: "X",
			Ts: us(f, longest.StartNs), Dur: float64(longest.WaitNs) / 1e3, Pid: pid, Tid: tid,
			Args: map[string]any{"peer": longest.Peer, "op": longest.Op}})
	}
	return ev
}

// Write writes the timeline as JSON.
func (c *Chrome) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	return enc.Encode(c)
}

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// recordMarker starts every line rank 0 writes for the parent. Lines
// without it (a rank's own prints, runtime warnings sent to stdout) pass
// through to the user untouched.
const recordMarker = "#hcclrun-bench "

// Row is one line of the table: one collective at one size.
type Row struct {
	Coll  string `json:"collective"`
	Ranks int    `json:"ranks"`
	Bytes int64  `json:"size_bytes"` // the size column: max(send, recv) buffer bytes
	Count int    `json:"count"`      // the count column (see Layout.Count)
	Type  string `json:"type"`
	RedOp string `json:"redop"`          // "none" for collectives that do not reduce
	Root  int    `json:"root"`           // -1 for collectives without a root
	Algo  string `json:"algo,omitempty"` // --algos: the algorithm forced ("auto": the selector's choice)
	// With --first, the ranks of the fresh job that measured this row.
	Job []RankInfo `json:"job,omitempty"`

	OutOfPlace Result  `json:"out_of_place"`
	InPlace    *Result `json:"in_place,omitempty"` // nil: the collective has no in-place form
}

// Result is the measurement of one placement.
type Result struct {
	TimeUS   float64 `json:"time_us"`   // mean iteration, maximum over ranks
	MedianUS float64 `json:"median_us"` // median iteration, maximum over ranks
	AlgBW    float64 `json:"algbw_gbps"`
	BusBW    float64 `json:"busbw_gbps"`
	Wrong    int64   `json:"wrong"` // wrong elements over all ranks; -1 when not checked
	// With --algos, each round's mean (time_us is their median).
	Samples []float64 `json:"samples_us,omitempty"`
	// With --first, the N calls' times in order (first.go says how a call
	// is timed; time_us is their mean, median_us their median), the first
	// and the slowest of them.
	CallsUS   []float64 `json:"calls_us,omitempty"`
	FirstUS   float64   `json:"first_us,omitempty"`
	SlowestUS float64   `json:"slowest_us,omitempty"`
}

// RankInfo says where one rank ran.
type RankInfo struct {
	Rank int    `json:"rank"`
	Pid  int    `json:"pid"`
	Host string `json:"host"`
}

// record is one line from rank 0 to the parent.
type record struct {
	Kind  string     `json:"kind"`            // "ranks", "start", "row" or "step"
	Ranks []RankInfo `json:"ranks,omitempty"` // kind "ranks"
	Coll  string     `json:"coll,omitempty"`  // kind "start": a collective's sweep begins
	Row   *Row       `json:"row,omitempty"`   // kind "row"
	Step  *StepRow   `json:"step,omitempty"`  // kind "step" (--graph)
}

// writeRecord sends rec to the parent on w (rank 0's stdout).
func writeRecord(w io.Writer, rec record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line := append([]byte(recordMarker), data...)
	_, err = w.Write(append(line, '\n'))
	return err
}

// recordDemux is the job's stdout as the parent sees it: it hands each
// record line to handle and copies every other line to out. The launcher
// writes whole lines, but the demux does not rely on it. It is safe for
// concurrent use.
type recordDemux struct {
	mu      sync.Mutex
	out     io.Writer
	handle  func(record) error
	pending []byte
	err     error // first bad record or handler failure
}

func (d *recordDemux) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = append(d.pending, p...)
	for {
		i := bytes.IndexByte(d.pending, '\n')
		if i < 0 {
			break
		}
		d.line(d.pending[:i+1])
		d.pending = d.pending[i+1:]
	}
	// Keep the tail in a buffer of its own, so that the consumed prefix is
	// not held for ever by a long run.
	d.pending = append([]byte(nil), d.pending...)
	return len(p), nil
}

func (d *recordDemux) line(l []byte) {
	rest, ok := bytes.CutPrefix(l, []byte(recordMarker))
	if !ok {
		if _, err := d.out.Write(l); err != nil && d.err == nil {
			d.err = err
		}
		return
	}
	var rec record
	if err := json.Unmarshal(rest, &rec); err != nil {
		if d.err == nil {
			d.err = fmt.Errorf("bad record from rank 0: %w", err)
		}
		return
	}
	if err := d.handle(rec); err != nil && d.err == nil {
		d.err = err
	}
}

// Close passes on an unterminated last line and returns the first error.
func (d *recordDemux) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) > 0 {
		d.line(d.pending)
		d.pending = nil
	}
	return d.err
}

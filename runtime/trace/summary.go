package trace

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
)

// SizeClass names the class of a call of n bytes (one rank's input):
// powers of 16 from 256 B, so that a job's calls fall into a handful.
func SizeClass(n int64) string {
	switch {
	case n <= 0:
		return "0 B"
	case n <= 256:
		return "<=256 B"
	}
	for _, c := range []struct {
		limit int64
		name  string
	}{{4 << 10, "<=4 KiB"}, {64 << 10, "<=64 KiB"}, {1 << 20, "<=1 MiB"}, {16 << 20, "<=16 MiB"}, {256 << 20, "<=256 MiB"}} {
		if n <= c.limit {
			return c.name
		}
	}
	return ">256 MiB"
}

// classOrder orders size classes as SizeClass's limits grow.
func classOrder(c string) int {
	return slices.Index([]string{"0 B", "<=256 B", "<=4 KiB", "<=64 KiB", "<=1 MiB", "<=16 MiB", "<=256 MiB", ">256 MiB"}, c)
}

// Stat is a rank's tally of one collective kind and size class.
type Stat struct {
	Coll    string           `json:"coll"`
	Class   string           `json:"size_class"`
	Calls   int64            `json:"calls"`
	Bytes   int64            `json:"bytes"`
	TotalNs int64            `json:"total_ns"`
	Algos   map[string]int64 `json:"algos"` // calls by algorithm
}

type tallyKey struct {
	coll  uint8
	class string
}

// Tally counts a rank's calls for HCCL_REPORT. It is not safe for
// concurrent use: a communicator runs one call at a time.
type Tally struct {
	stats map[tallyKey]*Stat
}

// NewTally returns an empty tally.
func NewTally() *Tally { return &Tally{stats: map[tallyKey]*Stat{}} }

// Add counts one call.
func (t *Tally) Add(coll uint8, bytes int64, d time.Duration, algo string) {
	k := tallyKey{coll, SizeClass(bytes)}
	s := t.stats[k]
	if s == nil {
		s = &Stat{Coll: plan.Coll(coll).String(), Class: k.class, Algos: map[string]int64{}}
		t.stats[k] = s
	}
	s.Calls++
	s.Bytes += bytes
	s.TotalNs += int64(d)
	s.Algos[algo]++
}

// Summary is what a rank sends the launcher at Close.
type Summary struct {
	Rank  int    `json:"rank"`
	Stats []Stat `json:"stats"`
}

// Summary returns the tally as rank's Summary, in a fixed order.
func (t *Tally) Summary(rank int) Summary {
	s := Summary{Rank: rank}
	for _, st := range t.stats {
		s.Stats = append(s.Stats, *st)
	}
	sortStats(s.Stats)
	return s
}

func sortStats(st []Stat) {
	slices.SortFunc(st, func(a, b Stat) int {
		return cmp.Or(cmp.Compare(a.Coll, b.Coll), cmp.Compare(classOrder(a.Class), classOrder(b.Class)))
	})
}

// ReportRow is one collective kind and size class of a job's report.
type ReportRow struct {
	Coll  string `json:"coll"`
	Class string `json:"size_class"`
	Ranks int    `json:"ranks"` // that reported calls of the class
	// Calls and Bytes are per rank (the mean over the ranks).
	Calls int64 `json:"calls"`
	Bytes int64 `json:"bytes"`
	// TotalNs is the time the calls took, per rank (the mean over the
	// ranks), MeanNs that per call.
	TotalNs int64            `json:"total_ns"`
	MeanNs  int64            `json:"mean_ns"`
	Algos   map[string]int64 `json:"algos"` // calls by algorithm, summed over the ranks
	// SlowestRank is the rank whose calls took longest on average,
	// SlowestMeanNs its mean.
	SlowestRank   int   `json:"slowest_rank"`
	SlowestMeanNs int64 `json:"slowest_mean_ns"`
}

// Report is a job's report: its rows, and the ranks that sent no
// summary (they died, or exited without Close).
type Report struct {
	Ranks   int         `json:"ranks"`
	Missing []int       `json:"missing_ranks,omitempty"`
	Rows    []ReportRow `json:"rows"`
}

// MakeReport combines the ranks' summaries of a job of size ranks.
func MakeReport(size int, sums []Summary) *Report {
	r := &Report{Ranks: size}
	have := map[int]bool{}
	type agg struct {
		row       ReportRow
		slowestNs float64
	}
	rows := map[[2]string]*agg{}
	for _, s := range sums {
		have[s.Rank] = true
		for _, st := range s.Stats {
			k := [2]string{st.Coll, st.Class}
			a := rows[k]
			if a == nil {
				a = &agg{row: ReportRow{Coll: st.Coll, Class: st.Class, Algos: map[string]int64{}, SlowestRank: -1}}
				rows[k] = a
			}
			a.row.Ranks++
			a.row.Calls += st.Calls
			a.row.Bytes += st.Bytes
			a.row.TotalNs += st.TotalNs
			for name, n := range st.Algos {
				a.row.Algos[name] += n
			}
			if st.Calls > 0 {
				if mean := float64(st.TotalNs) / float64(st.Calls); mean > a.slowestNs || a.row.SlowestRank < 0 {
					a.slowestNs, a.row.SlowestRank = mean, s.Rank
				}
			}
		}
	}
	for rank := range size {
		if !have[rank] {
			r.Missing = append(r.Missing, rank)
		}
	}
	for _, a := range rows {
		row := a.row
		n := int64(row.Ranks)
		if row.Calls > 0 {
			row.MeanNs = row.TotalNs / row.Calls
		}
		row.Calls, row.Bytes, row.TotalNs = row.Calls/n, row.Bytes/n, row.TotalNs/n
		row.SlowestMeanNs = int64(a.slowestNs)
		r.Rows = append(r.Rows, row)
	}
	slices.SortFunc(r.Rows, func(a, b ReportRow) int {
		return cmp.Or(cmp.Compare(a.Coll, b.Coll), cmp.Compare(classOrder(a.Class), classOrder(b.Class)))
	})
	return r
}

// Print writes the report as a table.
func (r *Report) Print(w io.Writer) error {
	fmt.Fprintf(w, "hcclrun report: %d ranks; calls, bytes and total time per rank (mean over the ranks)\n", r.Ranks)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COLLECTIVE\tSIZE\tCALLS\tBYTES\tTOTAL\tMEAN\tALGORITHMS\tSLOWEST RANK (MEAN)")
	for _, row := range r.Rows {
		var algos []string
		for _, name := range slices.Sorted(maps.Keys(row.Algos)) {
			algos = append(algos, fmt.Sprintf("%s:%d", name, row.Algos[name]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%v\t%v\t%s\t%d (%v)\n", row.Coll, row.Class, row.Calls, row.Bytes,
			time.Duration(row.TotalNs).Round(time.Microsecond), roundMean(row.MeanNs), strings.Join(algos, " "),
			row.SlowestRank, roundMean(row.SlowestMeanNs))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Missing) > 0 {
		_, err := fmt.Fprintf(w, "no summary from rank %v (died, or exited without Close)\n", r.Missing)
		return err
	}
	return nil
}

func roundMean(ns int64) time.Duration {
	d := time.Duration(ns)
	if d < 10*time.Microsecond {
		return d.Round(10 * time.Nanosecond)
	}
	return d.Round(time.Microsecond)
}

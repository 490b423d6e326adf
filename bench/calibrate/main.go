// Command calibrate turns the runs of bench/calibrate/calibrate into the
// predicted-vs-measured tables of docs/selector.md, and with -fit first
// fits runtime/selector's constants to them (selector.Fit).
//
//	go run ./bench/calibrate -dir /tmp/hccl-calibrate [-stat mean|median] [-over median|min] [-fit] [-tuning FILE] [-handoff D]
//
// Each run file holds one collective at one np and link, its algorithms
// (and "auto", the measured build's choice) compared within the one job
// (hcclrun bench --algos): a point's samples are its rounds' per-iteration
// means, out of place and in place, and its time is their median (-over
// median, the default) or minimum (-over min). -stat median takes bench's
// median iteration instead of the mean (one sample per placement): the
// mean is what a loop of calls costs, what nccl-tests and bench/compare
// report; the median hides an algorithm's tail, and can rank two
// algorithms the other way round from their means
// (docs/measurements.md#calibrate-takes-the-mean). The files of the
// script before --algos (one forced algorithm per job and sweep,
// s1-np2-shm-allreduce-ring-small.json) are still read: each job's mean is
// a sample. The points where the
// choice measured over 10% slower than the fastest are listed with the
// two compared round by round (paired), which tells the machine's drift
// from a real difference.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hcclrun/hcclrun/ranktable"
	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/selector"
)

// point names one measured configuration.
type point struct {
	link string // shm or tcp
	coll plan.Coll
	np   int
	size int64
	algo string
}

type runFile struct {
	Rows []struct {
		SizeBytes  int64    `json:"size_bytes"`
		Algo       string   `json:"algo"` // bench --algos; "" in a file of one forced algorithm
		OutOfPlace runTimes `json:"out_of_place"`
		InPlace    runTimes `json:"in_place"`
	} `json:"rows"`
}

// runTimes are one row's times of a run file: bench's mean and median
// iteration, and with --algos each round's mean.
type runTimes struct {
	MeanUS   float64   `json:"time_us"`
	MedianUS float64   `json:"median_us"`
	Samples  []float64 `json:"samples_us"`
}

// of returns the samples of statistic stat ("mean" or "median") of t:
// the rounds' means, or bench's one time of the statistic.
func (t runTimes) of(stat string) []float64 {
	switch {
	case stat == "median":
		return []float64{t.MedianUS}
	case len(t.Samples) > 0:
		return t.Samples
	}
	return []float64{t.MeanUS}
}

// autoAlgo is bench --algos' name for the selector's own choice.
const autoAlgo = "auto"

func main() {
	dir := flag.String("dir", "/tmp/hccl-calibrate", "directory the calibrate script wrote")
	stat := flag.String("stat", "mean", "which per-iteration time of bench a point takes: mean or median")
	over := flag.String("over", "median", "which of a point's samples (sweeps, out of place and in place) it takes: median or min")
	fit := flag.Bool("fit", false, "fit the model's constants to the points first")
	tuning := flag.String("tuning", "", "start from this tuning file (selector.ParseTuning) instead of DefaultModel")
	handoff := flag.Duration("handoff", -1, "price as for a host whose shared core changes hands in this time (default: the handoff_ns of DIR/ranktable.json, which the script saves)")
	flag.Parse()
	if *stat != "mean" && *stat != "median" {
		fmt.Fprintf(os.Stderr, "calibrate: -stat %q: want mean or median\n", *stat)
		os.Exit(2)
	}
	if *over != "median" && *over != "min" {
		fmt.Fprintf(os.Stderr, "calibrate: -over %q: want median or min\n", *over)
		os.Exit(2)
	}
	if err := run(os.Stdout, *dir, *stat, *over, *fit, *tuning, *handoff); err != nil {
		fmt.Fprintln(os.Stderr, "calibrate:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, dir, stat, over string, fit bool, tuning string, handoff time.Duration) error {
	times, samples, spread, err := load(dir, stat, over)
	if err != nil {
		return err
	}
	env, err := rankEnv(dir)
	if err != nil {
		return err
	}
	if tuning != "" {
		env["HCCL_TUNING_FILE"] = tuning
	}
	if handoff < 0 {
		if handoff, err = tableHandoff(dir); err != nil {
			return err
		}
	}
	// The model the runs' jobs chose with: the caller may have set
	// HCCL_SHM_DIRECT for them (rank.env), and their launcher measured
	// the hand-off (ranktable.json).
	m, _, err := selector.FromEnv(func(k string) string { return env[k] }, handoff)
	if err != nil {
		return err
	}
	if fit {
		var samples []selector.Sample
		for p, t := range times {
			if p.algo == autoAlgo {
				continue // not an algorithm: the build's choice among them
			}
			samples = append(samples, selector.Sample{Call: call(p), Algo: p.algo, NoShm: p.link == "tcp", Time: t})
		}
		if m, err = selector.Fit(m, samples); err != nil {
			return err
		}
		fmt.Fprintf(w, "Fitted constants (tuning file syntax):\n\n```\n")
		fmt.Fprintf(w, "shm.alpha %v\nshm.bandwidth %.3g\nshm.head.bandwidth %.3g\nnet.alpha %v\nnet.bandwidth %.3g\nreduce.bandwidth %.3g\ncopy.bandwidth %.3g\nstep %v\nhandoff %v\ncores %d\nwake %v\nnet.wake %v\n"+
			"exchange.slowdown %.3g\ncache.bytes %d\nmemory.bytes %d\nmemory.slowdown %.3g\n```\n\n",
			m.Links[selector.Shm].Alpha, 1/m.Links[selector.Shm].Beta, 1/m.Head, m.Links[selector.Net].Alpha, 1/m.Links[selector.Net].Beta,
			1/m.Gamma, 1/m.Copy, m.Step, m.Handoff, m.Cores, m.Wake, m.NetWake, m.Exchange, m.CacheBytes, m.MemBytes, m.MemSlowdown)
	}
	fmt.Fprintf(w, "Spread of a point's samples (max/min): median %.2f, 90th percentile %.2f.\n\n", spread[0], spread[1])
	report(w, m, times, samples)
	return nil
}

// load reads every run file of dir and returns each point's median (or,
// with over "min", minimum) over sweeps of the statistic stat, every
// point's samples (in the order of the rounds, out of place then in
// place, so that two algorithms' i-th samples were measured in the same
// round), and the median and 90th percentile of the
// points' spreads.
func load(dir, stat, over string) (map[point]time.Duration, map[point][]float64, [2]float64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*np*-*-*-*.json"))
	if err != nil || len(files) == 0 {
		return nil, nil, [2]float64{}, fmt.Errorf("no run files in %s (err %v)", dir, err)
	}
	all := map[point][]float64{}
	for _, f := range files {
		// np2-shm-allreduce-small.json (bench --algos, the algorithm in
		// each row), or an older script's s1-np2-shm-allreduce-ring-small.json
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".json"), "-")
		var fileAlgo string
		switch len(parts) {
		case 4:
		case 6:
			fileAlgo = parts[4]
			parts = append(parts[1:4], parts[5])
		default:
			continue
		}
		np, err := strconv.Atoi(strings.TrimPrefix(parts[0], "np"))
		if err != nil {
			return nil, nil, [2]float64{}, fmt.Errorf("%s: bad np", f)
		}
		coll, err := selector.ParseColl(parts[2])
		if err != nil {
			return nil, nil, [2]float64{}, fmt.Errorf("%s: %w", f, err)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, [2]float64{}, err
		}
		var rf runFile
		if err := json.Unmarshal(b, &rf); err != nil {
			return nil, nil, [2]float64{}, fmt.Errorf("%s: %w", f, err)
		}
		for _, r := range rf.Rows {
			if r.SizeBytes == 0 || (parts[3] == "big" && r.SizeBytes < 256<<10) {
				continue // the big run's first size only warms the launch up
			}
			algo := cmp.Or(r.Algo, fileAlgo)
			if algo == "" {
				return nil, nil, [2]float64{}, fmt.Errorf("%s: a row of %d bytes names no algorithm", f, r.SizeBytes)
			}
			p := point{link: parts[1], coll: coll, np: np, size: r.SizeBytes, algo: algo}
			for _, v := range append(r.OutOfPlace.of(stat), r.InPlace.of(stat)...) {
				if v > 0 {
					all[p] = append(all[p], v)
				}
			}
		}
	}
	times := map[point]time.Duration{}
	var spreads []float64
	for p, v := range all {
		v = slices.Sorted(slices.Values(v)) // all[p] keeps the rounds' order, for pairing
		t := median(v)
		if over == "min" {
			t = v[0]
		}
		times[p] = time.Duration(t * 1e3)
		if len(v) > 1 {
			spreads = append(spreads, v[len(v)-1]/v[0])
		}
	}
	slices.Sort(spreads)
	var sp [2]float64
	if len(spreads) > 0 {
		sp = [2]float64{median(spreads), spreads[len(spreads)*9/10]}
	}
	return times, all, sp, nil
}

func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

func call(p point) selector.Call {
	return selector.Call{Coll: p.coll, Bytes: p.size, Topo: selector.Topo{Ranks: p.np, Servers: 1}}
}

// group is one table: a link and a collective.
type group struct {
	link string
	coll plan.Coll
}

// report prints one markdown table per link and collective: for every np
// and size, each algorithm's measured and predicted time, the measured
// "auto" (the measured build's own choice) where the runs have it, the
// model's choice, the fastest measured, and how much slower the choice
// measured. Where a point has both, the measured auto and the chosen
// algorithm forced are the same calls timed twice in one job (when the
// model is the build's): how far apart they are is the run's own noise,
// summarised at the end.
func report(w io.Writer, m selector.Model, times map[point]time.Duration, samples map[point][]float64) {
	algos := map[group][]string{}
	rows := map[group]map[[2]int64]bool{}
	for p := range times {
		g := group{p.link, p.coll}
		if !slices.Contains(algos[g], p.algo) {
			algos[g] = append(algos[g], p.algo)
		}
		if rows[g] == nil {
			rows[g] = map[[2]int64]bool{}
		}
		rows[g][[2]int64{int64(p.np), p.size}] = true
	}
	var groups []group
	for g := range algos {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].link != groups[j].link {
			return groups[i].link < groups[j].link
		}
		return groups[i].coll < groups[j].coll
	})
	var worst, over []string // clearly worse; over 10% within the noise
	var twice []float64      // |auto measured / chosen measured - 1|
	var ratio []float64      // measured / predicted, every cell
	total, within, overlap := 0, 0, 0
	confirmed := 0 // over 10% by the medians and round by round
	for _, g := range groups {
		as := algos[g]
		slices.Sort(as)
		hasAuto := slices.Contains(as, autoAlgo)
		as = slices.DeleteFunc(as, func(a string) bool { return a == autoAlgo })
		mm := m
		if g.link == "tcp" {
			mm = m.WithoutShm()
		}
		fmt.Fprintf(w, "### %s over %s\n\nEach cell: measured / predicted, in us; * marks the fastest measured.\n\n| np | bytes |", g.coll, g.link)
		for _, a := range as {
			fmt.Fprintf(w, " %s |", a)
		}
		if hasAuto {
			fmt.Fprintf(w, " auto measured |")
		}
		fmt.Fprintf(w, " choice | choice vs fastest |\n|---|---:|")
		for range as {
			fmt.Fprintf(w, "---:|")
		}
		if hasAuto {
			fmt.Fprintf(w, "---:|")
		}
		fmt.Fprintf(w, "---|---:|\n")
		var keys [][2]int64
		for k := range rows[g] {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [2]int64) int {
			if a[0] != b[0] {
				return int(a[0] - b[0])
			}
			return int(a[1] - b[1])
		})
		for _, k := range keys {
			np, size := int(k[0]), k[1]
			c := selector.Call{Coll: g.coll, Bytes: size, Topo: selector.Topo{Ranks: np, Servers: 1}}
			t := selector.Predict(mm, selector.Policy{}, c)
			pred := map[string]time.Duration{}
			for _, e := range t.Candidates {
				if e.Err == nil {
					pred[e.Algo] = e.Time
				}
			}
			best := ""
			for _, a := range as {
				mt, ok := times[point{g.link, g.coll, np, size, a}]
				if ok && (best == "" || mt < times[point{g.link, g.coll, np, size, best}]) {
					best = a
				}
			}
			fmt.Fprintf(w, "| %d | %s |", np, selector.FormatBytes(size))
			for _, a := range as {
				mt, ok := times[point{g.link, g.coll, np, size, a}]
				mark := ""
				if a == best {
					mark = "*"
				}
				if !ok {
					fmt.Fprintf(w, " - / %s |", us(pred[a]))
					continue
				}
				fmt.Fprintf(w, " %s%s / %s |", mark, us(mt), us(pred[a]))
				if pred[a] > 0 {
					ratio = append(ratio, float64(mt)/float64(pred[a]))
				}
			}
			auto := "-"
			if e, err := t.Chosen(); err == nil {
				auto = e.Algo
			}
			if hasAuto {
				mt, ok := times[point{g.link, g.coll, np, size, autoAlgo}]
				if !ok {
					fmt.Fprintf(w, " - |")
				} else {
					fmt.Fprintf(w, " %s |", us(mt))
					if ct, ok := times[point{g.link, g.coll, np, size, auto}]; ok {
						twice = append(twice, math.Abs(float64(mt)/float64(ct)-1))
					}
				}
			}
			dist := "?"
			if at, ok := times[point{g.link, g.coll, np, size, auto}]; ok && best != "" {
				d := float64(at)/float64(times[point{g.link, g.coll, np, size, best}]) - 1
				dist = fmt.Sprintf("%+.0f%%", 100*d)
				total++
				if d <= 0.10 {
					within++
				} else {
					bt := times[point{g.link, g.coll, np, size, best}]
					as, bs := samples[point{g.link, g.coll, np, size, auto}], samples[point{g.link, g.coll, np, size, best}]
					pr := paired(as, bs)
					if pr.of > 0 && pr.ratio > 1.10 {
						confirmed++
					}
					miss := fmt.Sprintf("%s/%s np %d %s: %s %s vs %s %s%s", g.coll, g.link, np, selector.FormatBytes(size), auto, us(at), best, us(bt), pr)
					if slices.Min(as) <= slices.Max(bs) {
						overlap++
						dist += " (noise)"
						over = append(over, miss)
					} else {
						worst = append(worst, miss)
					}
				}
			}
			fmt.Fprintf(w, " %s | %s |\n", auto, dist)
		}
		fmt.Fprintln(w)
	}
	if len(twice) > 0 {
		slices.Sort(twice)
		fmt.Fprintf(w, "The choice timed twice in one job (auto measured vs the chosen algorithm forced), %d points: "+
			"they differ by %.1f%% at the median, %.1f%% at the 90th percentile, %.1f%% at most.\n\n",
			len(twice), 100*median(twice), 100*twice[len(twice)*9/10], 100*twice[len(twice)-1])
	}
	if len(ratio) > 0 {
		slices.Sort(ratio)
		within2 := 0
		for _, r := range ratio {
			if r >= 0.5 && r <= 2 {
				within2++
			}
		}
		fmt.Fprintf(w, "Measured over predicted, %d cells: %.2f at the 10th percentile, %.2f at the median, %.2f at the 90th; "+
			"within a factor of 2 at %d.\n\n", len(ratio), ratio[len(ratio)/10], median(ratio), ratio[len(ratio)*9/10], within2)
	}
	end := "."
	if len(worst) > 0 {
		end = ":\n"
	}
	fmt.Fprintf(w, "Automatic choice within 10%% of the fastest measured: %d of %d points; "+
		"%d more where the choice's fastest sample beat the fastest algorithm's slowest (marked noise); "+
		"%d clearly worse%s\n", within, total, overlap, len(worst), end)
	for _, s := range worst {
		fmt.Fprintf(w, "- %s\n", s)
	}
	if n := len(worst) + overlap; n > 0 {
		fmt.Fprintf(w, "\nOf the %d over 10%%, %d are also over 10%% round by round (the median of the rounds' ratios).\n", n, confirmed)
	}
	if len(over) > 0 {
		fmt.Fprintf(w, "\nOver 10%% within the noise:\n\n")
		for _, s := range over {
			fmt.Fprintf(w, "- %s\n", s)
		}
	}
}

// pairing is two algorithms' samples of one point compared round by
// round: the i-th samples of both were measured in the same round, back to
// back, so the machine's drift between rounds cancels.
type pairing struct {
	ratio      float64 // the median of the rounds' ratios a/b
	slower, of int     // rounds in which a was the slower, of all; 0 when the samples do not pair
}

// paired compares a with b round by round; the zero pairing when the
// samples do not pair (runs of the script before --algos).
func paired(a, b []float64) pairing {
	if len(a) != len(b) || len(a) == 0 {
		return pairing{}
	}
	ratios := make([]float64, len(a))
	slower := 0
	for i := range a {
		ratios[i] = a[i] / b[i]
		if a[i] > b[i] {
			slower++
		}
	}
	slices.Sort(ratios)
	return pairing{median(ratios), slower, len(a)}
}

func (p pairing) String() string {
	if p.of == 0 {
		return ""
	}
	return fmt.Sprintf(" (round by round: %.2fx at the median, slower in %d of %d)", p.ratio, p.slower, p.of)
}

func us(d time.Duration) string {
	v := float64(d) / 1e3
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// tableHandoff returns the hand-off the launcher measured for the runs
// (the handoff_ns of OUTDIR/ranktable.json, the table of the script's
// largest np), 0 when the file is absent (runs of an older script) or the
// table has none (no np beyond the cores).
func tableHandoff(dir string) (time.Duration, error) {
	t, err := ranktable.ReadFile(filepath.Join(dir, "ranktable.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return t.Handoff(), nil
}

// rankEnv reads the HCCL_ variables the calibrate script found in a
// rank's environment as hcclrun gives it (OUTDIR/rank.env, NAME=value
// lines), which change how the selector prices; none when the file is
// absent (runs of an older script).
func rankEnv(dir string) (map[string]string, error) {
	env := map[string]string{}
	data, err := os.ReadFile(filepath.Join(dir, "rank.env"))
	if errors.Is(err, fs.ErrNotExist) {
		return env, nil
	}
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.HasPrefix(name, "HCCL_") {
			env[name] = value
		}
	}
	return env, nil
}

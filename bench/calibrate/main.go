// Command calibrate turns the runs of bench/calibrate/calibrate into the
// predicted-vs-measured tables of docs/selector.md, and with -fit first
// fits runtime/selector's constants to them (selector.Fit).
//
//	go run ./bench/calibrate -dir /tmp/hccl-calibrate [-stat mean|median] [-over median|min] [-fit] [-tuning FILE]
//
// Each run file holds one forced algorithm at one np, link and sweep; a
// point's time is the median over the sweeps (-over median, the default)
// of bench's per-iteration means (-stat mean, the default) or medians
// (-stat median), out of place and in place (two samples a sweep), so
// that one loaded sweep does not move it. -over min takes the fastest
// sample instead: on a machine whose timings are bimodal (the KVM machine
// of 2026-12-02 moves its two CPUs between a placement where an exchange
// of one cache line takes 60 ns and one where it takes 270, every few
// tens of seconds), the median of a handful of sweeps falls on either
// mode by chance, while the minimum compares every algorithm in the
// faster one. The mean is what a loop of calls costs, what nccl-tests and
// bench/compare report; the median hides an algorithm's tail (rhd at np 4
// on two cores: a median of 31.7 us against oneshot's 46.2, means of 37-45
// against 27-29 in interleaved runs).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	hccl "github.com/hcclrun/hcclrun/runtime"
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
		OutOfPlace runTimes `json:"out_of_place"`
		InPlace    runTimes `json:"in_place"`
	} `json:"rows"`
}

// runTimes are one row's times of a run file: bench's mean and median
// iteration.
type runTimes struct {
	MeanUS   float64 `json:"time_us"`
	MedianUS float64 `json:"median_us"`
}

// of returns the statistic stat ("mean" or "median") of t.
func (t runTimes) of(stat string) float64 {
	if stat == "median" {
		return t.MedianUS
	}
	return t.MeanUS
}

func main() {
	dir := flag.String("dir", "/tmp/hccl-calibrate", "directory the calibrate script wrote")
	stat := flag.String("stat", "mean", "which per-iteration time of bench a point takes: mean or median")
	over := flag.String("over", "median", "which of a point's samples (sweeps, out of place and in place) it takes: median or min")
	fit := flag.Bool("fit", false, "fit the model's constants to the points first")
	tuning := flag.String("tuning", "", "start from this tuning file (selector.ParseTuning) instead of DefaultModel")
	flag.Parse()
	if *stat != "mean" && *stat != "median" {
		fmt.Fprintf(os.Stderr, "calibrate: -stat %q: want mean or median\n", *stat)
		os.Exit(2)
	}
	if *over != "median" && *over != "min" {
		fmt.Fprintf(os.Stderr, "calibrate: -over %q: want median or min\n", *over)
		os.Exit(2)
	}
	if err := run(os.Stdout, *dir, *stat, *over, *fit, *tuning); err != nil {
		fmt.Fprintln(os.Stderr, "calibrate:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, dir, stat, over string, fit bool, tuning string) error {
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
	// The model the runs' jobs chose with: the launcher may have set
	// HCCL_SHM_DIRECT for them (launcher/inplace.go).
	m, _, err := hccl.SelectorModel(func(k string) string { return env[k] })
	if err != nil {
		return err
	}
	if fit {
		var samples []selector.Sample
		for p, t := range times {
			samples = append(samples, selector.Sample{Call: call(p), Algo: p.algo, NoShm: p.link == "tcp", Time: t})
		}
		if m, err = selector.Fit(m, samples); err != nil {
			return err
		}
		fmt.Fprintf(w, "Fitted constants (tuning file syntax):\n\n```\n")
		fmt.Fprintf(w, "shm.alpha %v\nshm.bandwidth %.3g\nnet.alpha %v\nnet.bandwidth %.3g\nreduce.bandwidth %.3g\ncopy.bandwidth %.3g\nstep %v\nhandoff %v\ncores %d\nwake %v\n```\n\n",
			m.Links[selector.Shm].Alpha, 1/m.Links[selector.Shm].Beta, m.Links[selector.Net].Alpha, 1/m.Links[selector.Net].Beta,
			1/m.Gamma, 1/m.Copy, m.Step, m.Handoff, m.Cores, m.Wake)
	}
	fmt.Fprintf(w, "Sweep-to-sweep spread of a point (max/min of its samples): median %.2f, 90th percentile %.2f.\n\n", spread[0], spread[1])
	report(w, m, times, samples)
	return nil
}

// load reads every run file of dir and returns each point's median (or,
// with over "min", minimum) over sweeps of the statistic stat, every
// point's samples (sorted), and the median and 90th percentile of the
// points' spreads.
func load(dir, stat, over string) (map[point]time.Duration, map[point][]float64, [2]float64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "s*-np*-*-*-*-*.json"))
	if err != nil || len(files) == 0 {
		return nil, nil, [2]float64{}, fmt.Errorf("no run files in %s (err %v)", dir, err)
	}
	all := map[point][]float64{}
	for _, f := range files {
		// s1-np2-shm-allreduce-ring-small.json
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".json"), "-")
		if len(parts) != 6 {
			continue
		}
		np, err := strconv.Atoi(strings.TrimPrefix(parts[1], "np"))
		if err != nil {
			return nil, nil, [2]float64{}, fmt.Errorf("%s: bad np", f)
		}
		coll, err := selector.ParseColl(parts[3])
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
			if r.SizeBytes == 0 || (parts[5] == "big" && r.SizeBytes < 256<<10) {
				continue // the big run's first size only warms the launch up
			}
			p := point{link: parts[2], coll: coll, np: np, size: r.SizeBytes, algo: parts[4]}
			for _, v := range []float64{r.OutOfPlace.of(stat), r.InPlace.of(stat)} {
				if v > 0 {
					all[p] = append(all[p], v)
				}
			}
		}
	}
	times := map[point]time.Duration{}
	var spreads []float64
	for p, v := range all {
		slices.Sort(v)
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
// and size, each algorithm's measured and predicted time, the automatic
// choice, the fastest measured, and how much slower the choice measured.
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
	var worst []string
	total, within, overlap := 0, 0, 0
	for _, g := range groups {
		as := algos[g]
		slices.Sort(as)
		mm := m
		if g.link == "tcp" {
			mm = m.WithoutShm()
		}
		fmt.Fprintf(w, "### %s over %s\n\nEach cell: measured / predicted, in us; * marks the fastest measured.\n\n| np | bytes |", g.coll, g.link)
		for _, a := range as {
			fmt.Fprintf(w, " %s |", a)
		}
		fmt.Fprintf(w, " auto | auto vs fastest |\n|---|---:|")
		for range as {
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
			}
			auto := "-"
			if e, err := t.Chosen(); err == nil {
				auto = e.Algo
			}
			dist := "?"
			if at, ok := times[point{g.link, g.coll, np, size, auto}]; ok && best != "" {
				d := float64(at)/float64(times[point{g.link, g.coll, np, size, best}]) - 1
				dist = fmt.Sprintf("%+.0f%%", 100*d)
				total++
				as, bs := samples[point{g.link, g.coll, np, size, auto}], samples[point{g.link, g.coll, np, size, best}]
				noise := as[0] <= bs[len(bs)-1]
				if d <= 0.10 {
					within++
				} else if noise {
					overlap++
					dist += " (noise)"
				} else {
					worst = append(worst, fmt.Sprintf("%s/%s np %d %s: %s %s vs %s %s", g.coll, g.link, np, selector.FormatBytes(size), auto, us(at), best, us(times[point{g.link, g.coll, np, size, best}])))
				}
			}
			fmt.Fprintf(w, " %s | %s |\n", auto, dist)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Automatic choice within 10%% of the fastest measured: %d of %d points; "+
		"%d more where the choice's fastest sample beat the fastest algorithm's slowest (marked noise); "+
		"%d clearly worse:\n\n", within, total, overlap, len(worst))
	for _, s := range worst {
		fmt.Fprintf(w, "- %s\n", s)
	}
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

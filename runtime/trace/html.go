package trace

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// WriteHTML draws the timeline as one HTML page with an SVG inside, for
// a browser with no trace viewer at hand (Perfetto's UI is a web
// application that must be reached): a lane per track, in host and rank
// order; in a lane three rows, the calls, their steps and the waits for
// peers, each a box as long as it lasted, a call's box labelled with its
// collective and number where it fits; a time axis in microseconds. It
// shows the events whose start is in [from, to) microseconds (to <= from:
// all), width pixels wide. Hovering a box shows its name and arguments.
func (c *Chrome) WriteHTML(w io.Writer, width int, from, to float64) error {
	type lane struct {
		pid, tid   int
		name, host string
		sort       int
	}
	lanes := map[[2]int]*lane{}
	hosts := map[int]string{}
	get := func(pid, tid int) *lane {
		k := [2]int{pid, tid}
		if l := lanes[k]; l != nil {
			return l
		}
		l := &lane{pid: pid, tid: tid, name: fmt.Sprintf("tid %d", tid)}
		lanes[k] = l
		return l
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	var boxes []ChromeEvent
	for _, e := range c.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "process_name":
			hosts[e.Pid], _ = e.Args["name"].(string)
		case e.Ph == "M" && e.Name == "thread_name":
			get(e.Pid, e.Tid).name, _ = e.Args["name"].(string)
		case e.Ph == "M" && e.Name == "thread_sort_index":
			if n, ok := e.Args["sort_index"].(int); ok {
				get(e.Pid, e.Tid).sort = n
			}
		case e.Ph == "X":
			if to > from && (e.Ts < from || e.Ts >= to) {
				continue
			}
			get(e.Pid, e.Tid)
			boxes = append(boxes, e)
			lo, hi = min(lo, e.Ts), max(hi, e.Ts+e.Dur)
		}
	}
	if to > from {
		lo, hi = from, to
	}
	if len(boxes) == 0 {
		lo, hi = 0, 1
	}
	order := make([]*lane, 0, len(lanes))
	for _, l := range lanes {
		l.host = hosts[l.pid]
		order = append(order, l)
	}
	slices.SortFunc(order, func(a, b *lane) int {
		return cmp.Or(cmp.Compare(a.pid, b.pid), cmp.Compare(a.sort, b.sort), cmp.Compare(a.tid, b.tid))
	})
	index := map[[2]int]int{}
	for i, l := range order {
		index[[2]int{l.pid, l.tid}] = i
	}

	const (
		left, top, laneH, rowH, axisH = 190, 40, 66, 20, 30
	)
	plot := float64(width - left - 10)
	scale := plot / max(hi-lo, 1e-9)
	x := func(ts float64) float64 { return left + (ts-lo)*scale }
	height := top + len(order)*laneH + axisH

	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>hcclrun timeline</title>\n"+
		"<style>body{margin:0;font:12px DejaVu Sans,sans-serif;background:#fff}text{font:11px DejaVu Sans,sans-serif}</style></head><body>\n")
	fmt.Fprintf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", width, height)
	job, _ := c.Metadata["job_id"].(string)
	fmt.Fprintf(&b, "<text x=\"10\" y=\"20\" style=\"font-size:14px;font-weight:bold\">hcclrun trace merge: job %s, %.1f us to %.1f us (hcclrun's own HTML view)</text>\n",
		html.EscapeString(job), lo, hi)
	fmt.Fprintf(&b, "<text x=\"10\" y=\"34\" fill=\"#555\">rows per rank: calls / plan steps / waits for a peer (red); hover a box for its details</text>\n")
	for i, l := range order {
		y := top + i*laneH
		if i%2 == 0 {
			fmt.Fprintf(&b, "<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n", y, width, laneH)
		}
		fmt.Fprintf(&b, "<text x=\"8\" y=\"%d\" style=\"font-weight:bold\">%s</text>\n", y+18, html.EscapeString(l.name))
		fmt.Fprintf(&b, "<text x=\"8\" y=\"%d\" fill=\"#555\">%s</text>\n", y+34, html.EscapeString(l.host))
	}
	colors := map[string]string{"AllReduce": "#4c78a8", "AllGather": "#54a24b", "ReduceScatter": "#b279a2",
		"Broadcast": "#f58518", "Reduce": "#eeca3b", "AlltoAll": "#72b7b2", "AlltoAllV": "#9d755d", "Barrier": "#bab0ac", "SendRecv": "#ff9da6"}
	for _, e := range boxes {
		i, ok := index[[2]int{e.Pid, e.Tid}]
		if !ok {
			continue
		}
		row, fill := 0, colors[e.Name]
		switch e.Cat {
		case "step":
			row, fill = 1, "#9ecae1"
		case "wait":
			row, fill = 2, "#e45756"
		}
		if fill == "" {
			fill = "#888"
		}
		x0, x1 := max(x(e.Ts), left), min(x(e.Ts+e.Dur), float64(width-10))
		y := top + i*laneH + 4 + row*rowH
		fmt.Fprintf(&b, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.3\"><title>%s</title></rect>\n",
			x0, y, max(x1-x0, 0.6), rowH-3, fill, html.EscapeString(describe(e)))
		switch {
		case e.Cat == "call" && x1-x0 > 70:
			fmt.Fprintf(&b, "<text x=\"%.2f\" y=\"%d\" fill=\"#fff\">%s #%v</text>\n", x0+3, y+12, html.EscapeString(e.Name), e.Args["seq"])
		case e.Cat != "call" && x1-x0 > 60:
			fmt.Fprintf(&b, "<text x=\"%.2f\" y=\"%d\" fill=\"#000\">%s</text>\n", x0+3, y+12, html.EscapeString(e.Name))
		}
	}
	// The axis: about ten ticks at a round step.
	ay := top + len(order)*laneH
	step := math.Pow(10, math.Floor(math.Log10((hi-lo)/10)))
	for _, m := range []float64{1, 2, 5, 10} {
		if (hi-lo)/(step*m) <= 12 {
			step *= m
			break
		}
	}
	fmt.Fprintf(&b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", left, ay, width-10, ay)
	for t := math.Ceil(lo/step) * step; t <= hi; t += step {
		fmt.Fprintf(&b, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#333\"/><text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%g us</text>\n",
			x(t), ay, x(t), ay+5, x(t), ay+18, t)
	}
	b.WriteString("</svg>\n</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// describe is a box's hover text: its name, times and arguments.
func describe(e ChromeEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %.3f us at %.3f us", e.Name, e.Dur, e.Ts)
	keys := make([]string, 0, len(e.Args))
	for k := range e.Args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := e.Args[k]
		if ops, ok := v.([]string); ok {
			v = "\n  " + strings.Join(ops, "\n  ")
		}
		fmt.Fprintf(&b, "\n%s: %v", k, v)
	}
	return b.String()
}

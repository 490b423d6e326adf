// This file draws the bus bandwidth of an hcclrun bench sweep against
// message size, one line per collective, on a log-2 size axis, as SVG or
// PNG (gonum.org/v1/plot).

package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/hcclrun/hcclrun/bench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// write draws out-of-place busbw against size, one line per collective
// (per collective and algorithm for rows of bench --algos), and saves it
// as SVG or PNG (by path's extension). Size 0 has no place on a log axis
// and is left out.
func write(path, title string, rows []bench.Row) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png":
	default:
		return fmt.Errorf("--plot %s: want a .svg or .png file", path)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "size (bytes, log 2)"
	p.Y.Label.Text = "busbw (GB/s)"
	p.X.Scale = plot.LogScale{}
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true

	var order []string
	series := map[string]plotter.XYs{}
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, r := range rows {
		if r.Bytes <= 0 {
			continue
		}
		name := r.Coll
		if r.Algo != "" {
			name += " " + r.Algo
		}
		if _, ok := series[name]; !ok {
			order = append(order, name)
		}
		series[name] = append(series[name], plotter.XY{X: float64(r.Bytes), Y: r.OutOfPlace.BusBW})
		lo, hi = min(lo, r.Bytes), max(hi, r.Bytes)
	}
	if len(order) == 0 {
		return fmt.Errorf("--plot %s: no row with a size above 0 to draw", path)
	}
	for i, name := range order {
		line, points, err := plotter.NewLinePoints(series[name])
		if err != nil {
			return fmt.Errorf("--plot %s: %s: %w", path, name, err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(name, line, points)
	}
	p.X.Tick.Marker = pow2Ticks{}
	p.X.Min, p.X.Max = float64(lo), float64(hi)
	if lo == hi { // a single size: give the log axis some width
		p.X.Min, p.X.Max = float64(lo)/2, float64(hi)*2
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	return nil
}

// pow2Ticks marks every power of two in range, labelling at most about ten
// of them (every second or fourth when the sweep is long) as 8, 1K, 64M.
type pow2Ticks struct{}

func (pow2Ticks) Ticks(lo, hi float64) []plot.Tick {
	first, last := int(math.Ceil(math.Log2(lo))), int(math.Floor(math.Log2(hi)))
	every := 1
	for (last-first)/every > 10 {
		every *= 2
	}
	var ticks []plot.Tick
	for e := first; e <= last; e++ {
		t := plot.Tick{Value: math.Exp2(float64(e))}
		if (e-first)%every == 0 {
			t.Label = bench.FormatSize(int64(t.Value))
		}
		ticks = append(ticks, t)
	}
	return ticks
}

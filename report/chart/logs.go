package chart

import (
	"fmt"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/vllmlog"
)

// RenderStartup draws where a server's start-up time went as PNG and SVG:
// a horizontal bar chart, one bar per phase in order (the first at the
// top), labelled with its seconds and share of the whole.
func RenderStartup(sp *vllmlog.StartupPlot) (pngData, svgData []byte, err error) {
	if len(sp.Phases) == 0 {
		return nil, nil, fmt.Errorf("startup plot: no phases")
	}
	n := len(sp.Phases)
	values := make(plotter.Values, n)
	names := make([]string, n)
	total := 0.0
	for _, ph := range sp.Phases {
		total += ph.Seconds
	}
	var labels plotter.XYLabels
	for i, ph := range sp.Phases {
		// The first phase at the top: bars are placed bottom-up.
		k := n - 1 - i
		values[k], names[k] = ph.Seconds, ph.Name
		labels.XYs = append(labels.XYs, plotter.XY{X: ph.Seconds, Y: float64(k)})
		labels.Labels = append(labels.Labels, fmt.Sprintf("  %s s (%.0f %%)", report.FormatDecimal(ph.Seconds, 2), 100*ph.Seconds/total))
	}
	p := newPlot(sp.Title, "seconds", "")
	bars, err := plotter.NewBarChart(values, vg.Points(14))
	if err != nil {
		return nil, nil, fmt.Errorf("startup plot: %w", err)
	}
	bars.Horizontal = true
	bars.Color = colour(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, nil, fmt.Errorf("startup plot: %w", err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].YAlign = draw.YCenter
		l.TextStyle[i].Font.Size = vg.Points(9)
	}
	p.Add(l)
	p.NominalY(names...)
	maxS := 0.0
	for _, v := range values {
		maxS = max(maxS, v)
	}
	p.X.Min, p.X.Max = 0, maxS*1.3+1e-9
	p.X.Tick.Marker = niceTicks{}
	h := vg.Length(1.2+0.35*float64(n)) * vg.Inch
	if pngData, svgData, err = encode(10*vg.Inch, h, func(c draw.Canvas) { p.Draw(c) }); err != nil {
		return nil, nil, fmt.Errorf("startup plot: %w", err)
	}
	return pngData, svgData, nil
}

// RenderLogDecay draws a log's generation throughput against the context
// in flight as PNG and SVG, with the fitted decode law when it holds.
func RenderLogDecay(dp *vllmlog.LogDecayPlot) (pngData, svgData []byte, err error) {
	if len(dp.Points) == 0 {
		return nil, nil, fmt.Errorf("decay plot: no points")
	}
	p := newPlot(dp.Title, dp.XLabel, "generation tokens/s (server)")
	var pts plotter.XYs
	for _, pt := range dp.Points {
		if !math.IsNaN(pt.X) && !math.IsNaN(pt.TokensPerSec) {
			pts = append(pts, plotter.XY{X: pt.X, Y: pt.TokensPerSec})
		}
	}
	if len(pts) == 0 {
		return nil, nil, fmt.Errorf("decay plot: no point has both figures")
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, nil, fmt.Errorf("decay plot: %w", err)
	}
	s.GlyphStyle.Color = colour(0)
	s.GlyphStyle.Radius = vg.Points(3)
	s.GlyphStyle.Shape = draw.CircleGlyph{}
	p.Add(s)
	p.Legend.Add("stats lines", s)
	entries := 1
	if f := dp.Fit; f != nil && f.Holds && dp.Streams > 0 {
		var curve plotter.XYs
		lo, hi := 0.0, f.ContextMax*1.05
		for i := 0; i <= 60; i++ {
			x := lo + (hi-lo)*float64(i)/60
			if y := dp.Streams * f.PerStream(x); !math.IsNaN(y) && !math.IsInf(y, 0) {
				curve = append(curve, plotter.XY{X: x, Y: y})
			}
		}
		addLine(p, fmt.Sprintf("fit: %s requests / (%s ms + %s ns × context), R² %.4f",
			report.FormatDecimal(dp.Streams, 2), sig(f.InterceptMS), sig(f.SlopeNSPerToken), f.R2), curve, colour(1), true)
		entries++
	}
	p.X.Min = 0
	p.X.Tick.Marker = niceTicks{}
	p.Y.Tick.Marker = niceTicks{}
	headroom(p, maxY(pts), entries)
	if pngData, svgData, err = encode(9*vg.Inch, 5.5*vg.Inch, func(c draw.Canvas) { p.Draw(c) }); err != nil {
		return nil, nil, fmt.Errorf("decay plot: %w", err)
	}
	return pngData, svgData, nil
}

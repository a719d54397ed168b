package chart

import (
	_ "embed" // readout.js
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// readoutScript is report.html's only script, inline (readout.js): over a
// plot it reads the value of the data point nearest the pointer, from the
// figure's panels (data-panels: each data area's place in the SVG, its
// axes and the series drawn on it); a click shows the plot across the
// window, where the wheel zooms about the pointer by redrawing the panel
// with its axes rescaled (the x axis of every panel that shares it), a
// double click shows all of it again, and Esc or another click closes it.
// It loads nothing.
//
//go:embed readout.js
var readoutScript string

// Series is one series of a panel as the page's script reads it: its
// name, colour and style, and its points as x, y pairs.
type Series struct {
	Name  string `json:"n"`
	Color string `json:"c"` // CSS colour, "#0072b2"
	// Style is how it is drawn: "line", "dash", "dots" or "bars" (at the
	// category index x).
	Style string    `json:"k"`
	XY    []float64 `json:"p"`
	// Offset shifts the series right by so many points: a bar beside
	// another at the same category.
	Offset float64 `json:"o,omitempty"`
}

// recorder collects, while a figure is painted, what its page needs for
// the readout and the zoom: each panel's place and axes, and the series
// drawn on it. A nil recorder records nothing.
type recorder struct {
	panels []Panel
	series map[*plot.Plot][]Series
}

func newRecorder() *recorder { return &recorder{series: map[*plot.Plot][]Series{}} }

// add notes a series drawn on p (before p is recorded).
func (r *recorder) add(p *plot.Plot, name string, pts plotter.XYs, c color.Color, style string) {
	if r == nil || len(pts) == 0 {
		return
	}
	s := Series{Name: name, Color: cssColor(c), Style: style, XY: make([]float64, 0, 2*len(pts))}
	for _, q := range pts {
		if finite(q.X) && finite(q.Y) {
			s.XY = append(s.XY, sig4(q.X), sig4(q.Y))
		}
	}
	r.series[p] = append(r.series[p], s)
}

// offset shifts the last series added to p by off (a bar chart's Offset).
func (r *recorder) offset(p *plot.Plot, off vg.Length) {
	if r == nil || len(r.series[p]) == 0 {
		return
	}
	r.series[p][len(r.series[p])-1].Offset = math.Round(off.Points()*100) / 100
}

// record notes p's data area on canvas c (the canvas p was drawn on, of a
// figure h high), naming its axes xName and yName (for the readout; ""
// for an axis of categories, which does not zoom), with the series added
// for p.
func (r *recorder) record(h vg.Length, p *plot.Plot, c draw.Canvas, xName, yName string) {
	if r == nil {
		return
	}
	dc := p.DataCanvas(c)
	_, xlog := p.X.Scale.(plot.LogScale)
	_, ylog := p.Y.Scale.(plot.LogScale)
	pt := func(l vg.Length) float64 { return math.Round(l.Points()*100) / 100 }
	r.panels = append(r.panels, Panel{Left: pt(dc.Min.X), Right: pt(dc.Max.X), Top: pt(h - dc.Max.Y), Bottom: pt(h - dc.Min.Y),
		OuterLeft: pt(c.Min.X), OuterBottom: pt(h - c.Min.Y),
		XMin: p.X.Min, XMax: p.X.Max, YMin: p.Y.Min, YMax: p.Y.Max, XLog: xlog, YLog: ylog, XName: xName, YName: yName,
		XTitle: p.X.Label.Text, YTitle: p.Y.Label.Text, Series: r.series[p]})
}

// stages gives the last n panels recorded the stages' spans, and the last
// of them the band under its axis where their names are written: its top
// and bottom in the SVG's coordinates (y down).
func (r *recorder) stages(n int, spans []Span, top, bottom vg.Length) {
	if r == nil || len(spans) == 0 || n > len(r.panels) {
		return
	}
	ps := r.panels[len(r.panels)-n:]
	for i := range ps {
		ps[i].Stages = spans
	}
	pt := func(l vg.Length) float64 { return math.Round(l.Points()*100) / 100 }
	ps[n-1].BandTop, ps[n-1].BandBottom = pt(top), pt(bottom)
}

// cssColor writes c as "#rrggbb".
func cssColor(c color.Color) string {
	cr, cg, cb, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", cr>>8, cg>>8, cb>>8)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// sig4 rounds v to five significant digits, which the readout shows at
// most, so a page's data stays small.
func sig4(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 5, 64), 64)
	return f
}

package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/internal/decodelaw"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/correlate"
)

// Figure is one rendered plot, in both formats.
type Figure struct {
	Name  string // file name without extension: "timeline", "decay", "latency" or "stages"
	Title string // one line saying what the plot shows
	// Notes say, one sentence each, what the plot leaves out and why (a
	// panel of an empty or all-zero series); they are also written under
	// the plot.
	Notes []string
	// Panels are where the plot's data areas are and what their axes
	// span, for the HTML page's readout of the value under the pointer.
	Panels []Panel
	PNG    []byte
	SVG    []byte
}

// Panel is one data area of a figure: its rectangle in the SVG's
// coordinates (points, origin at the top left, as the viewBox has them),
// the left and bottom edges of the area its axes take, its axes' ranges,
// names, titles and scales, and the series drawn on it. An axis with an
// empty name (stage names, say) has no readout and does not zoom.
type Panel struct {
	Left        float64  `json:"l"`
	Top         float64  `json:"t"`
	Right       float64  `json:"r"`
	Bottom      float64  `json:"b"`
	OuterLeft   float64  `json:"ol"`
	OuterBottom float64  `json:"ob"`
	XMin        float64  `json:"x0"`
	XMax        float64  `json:"x1"`
	YMin        float64  `json:"y0"`
	YMax        float64  `json:"y1"`
	XLog        bool     `json:"xl,omitempty"`
	YLog        bool     `json:"yl,omitempty"`
	XName       string   `json:"xn,omitempty"`
	YName       string   `json:"yn,omitempty"`
	XTitle      string   `json:"xt,omitempty"`
	YTitle      string   `json:"yt,omitempty"`
	XLabels     []string `json:"xc,omitempty"` // the categories of an axis of categories
	Series      []Series `json:"s,omitempty"`
	// Stages are the stages' spans on a time axis, drawn as boundaries;
	// BandTop and BandBottom, on the last panel only, where the stages'
	// names are written under the axis.
	Stages     []Span  `json:"st,omitempty"`
	BandTop    float64 `json:"bt,omitempty"`
	BandBottom float64 `json:"bb,omitempty"`
}

// Span is one stage's name and span on a time axis, in seconds.
type Span struct {
	Name string  `json:"n"`
	From float64 `json:"a"`
	To   float64 `json:"b"`
}

// PlotNames returns the names of the figures Figures renders, in order.
func PlotNames() []string { return []string{"timeline", "decay", "latency", "stages"} }

// pngDPI is the PNG resolution: 10 × 7.5 inches at 110 dpi is 1100 × 825
// pixels, readable on a laptop screen and in a pull request.
const pngDPI = 110

// colour returns the i-th of seven distinguishable colours (Okabe–Ito,
// readable with colour blindness), cycling.
func colour(i int) color.Color {
	palette := [...]color.RGBA{
		{0, 114, 178, 255},   // blue
		{213, 94, 0, 255},    // vermillion
		{0, 158, 115, 255},   // bluish green
		{204, 121, 167, 255}, // reddish purple
		{230, 159, 0, 255},   // orange
		{86, 180, 233, 255},  // sky blue
		{0, 0, 0, 255},       // black
	}
	return palette[i%len(palette)]
}

// grey draws what is context rather than data.
func grey() color.Color { return color.RGBA{150, 150, 150, 255} }

// Figures renders the four plots of a run from the aggregate and its
// summary (s = a.Summary()). They are a pure function of the records added,
// so 'bench plot RESULTS' rebuilds exactly what 'bench run' drew.
func Figures(a *report.Aggregate, s *report.Summary) ([]Figure, error) {
	ws := a.Windows()
	names := map[int]string{}
	for _, st := range s.Stages {
		names[st.Index] = st.Name
	}
	type render struct {
		name, title string
		w, h        vg.Length
		draw        func(draw.Canvas, *recorder)
		notes       []string
	}
	var fit map[int]*decodelaw.Fit
	pooled := map[int]bool{}
	if c := s.Correlation; c != nil {
		fit = map[int]*decodelaw.Fit{}
		for _, st := range c.Stages {
			switch {
			case st.Fit != nil && st.Fit.Holds:
				fit[st.Index] = st.Fit
			case c.Fit != nil && c.Fit.Holds && st.End != nil && st.End.Streams > 0:
				// No law of its own (too few steady windows): the law
				// fitted over every stage, at this stage's streams, over
				// the contexts it was fitted on.
				f := *c.Fit
				f.Streams = st.End.Streams
				fit[st.Index], pooled[st.Index] = &f, true
			}
		}
	}
	hasKV, _, _ := timelineNotes(ws)
	gpus := a.GPUSeries()
	gp, _, _ := gpuPanels(nil, gpus)
	timelineHeight := 9.5*vg.Inch + gpuTimelineHeight(len(gp), len(gpus), 5+len(gp))
	decayHeight := 5.5 * vg.Inch
	if hasKV {
		decayHeight = 8 * vg.Inch
	}
	renders := []render{
		{"timeline", "Output tok/s, each request's TTFT and E2E by the time it was sent, running and waiting requests, KV-cache usage, preemptions and each GPU's power and utilisation over time",
			10 * vg.Inch, timelineHeight, func(c draw.Canvas, rec *recorder) { drawTimeline(c, rec, ws, gpus, names, a.Scope(nil)) }, timelineNoteList(ws, gpus)},
		{"decay", "Output tok/s against the context in flight, with the fitted decode law, and KV-cache usage on the same axis when it was scraped",
			9 * vg.Inch, decayHeight, func(c draw.Canvas, rec *recorder) { drawDecay(c, rec, ws, names, fit, pooled) }, nil},
		{"latency", "Distributions of TTFT and ITL, per stage",
			10 * vg.Inch, 4.5 * vg.Inch, func(c draw.Canvas, rec *recorder) { drawLatency(c, rec, a, names) }, nil},
		{"stages", "p50 and p99 of TTFT and ITL per stage",
			10 * vg.Inch, 4.5 * vg.Inch, func(c draw.Canvas, rec *recorder) { drawStages(c, rec, s.Stages) }, nil},
	}
	out := make([]Figure, 0, len(renders))
	for _, r := range renders {
		f := Figure{Name: r.name, Title: r.title, Notes: r.notes}
		paint := func(c draw.Canvas) {
			rec := newRecorder() // each format paints the same panels
			r.draw(c, rec)
			f.Panels = rec.panels
		}
		var err error
		if f.PNG, f.SVG, err = encode(r.w, r.h, paint); err != nil {
			return nil, fmt.Errorf("plot %s: %w", r.name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// encode draws the figure twice, into a PNG and an SVG canvas.
func encode(w, h vg.Length, paint func(draw.Canvas)) (pngBytes, svgBytes []byte, err error) {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	paint(draw.New(img))
	var b bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return nil, nil, err
	}
	pngBytes = slices.Clone(b.Bytes())
	svg := vgsvg.New(w, h)
	dc := draw.New(svg)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	paint(dc)
	b.Reset()
	if _, err := svg.WriteTo(&b); err != nil {
		return nil, nil, err
	}
	return pngBytes, b.Bytes(), nil
}

// WritePlots writes each figure as NAME.png and NAME.svg into dir and
// returns the paths written.
func WritePlots(dir string, figs []Figure) ([]string, error) {
	var paths []string
	for _, f := range figs {
		for _, x := range []struct {
			ext  string
			data []byte
		}{{".png", f.PNG}, {".svg", f.SVG}} {
			p := filepath.Join(dir, f.Name+x.ext)
			if err := atomicfile.WriteBytes(p, x.data); err != nil {
				return paths, fmt.Errorf("write plot: %w", err)
			}
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// plotFont is the font family of every plot: Liberation Sans, the family
// report.html names first, so the page and its plots read alike.
func plotFont() font.Font { return font.Font{Typeface: "Liberation", Variant: "Sans"} }

// unifyFont sets every text of p in plotFont, keeping the sizes. gonum
// draws in its serif default otherwise; changing plot.DefaultFont would
// change a package-level variable.
func unifyFont(p *plot.Plot) {
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Typeface, f.Variant = plotFont().Typeface, plotFont().Variant
	}
}

// newPlot returns a plot with the house look: grid, legend at the top left.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	unifyFont(p)
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Padding = legendPadding
	p.Add(plotter.NewGrid())
	return p
}

// seconds returns the window's midpoint in seconds.
func midS(w *correlate.Window) float64 { return (w.From + w.To).Seconds() / 2 }

// series builds the points (x, f(w)) over the windows where f is known.
func series(ws []correlate.Window, x, f func(*correlate.Window) float64) plotter.XYs {
	var out plotter.XYs
	for i := range ws {
		xv, yv := x(&ws[i]), f(&ws[i])
		if math.IsNaN(xv) || math.IsNaN(yv) || math.IsInf(yv, 0) {
			continue
		}
		out = append(out, plotter.XY{X: xv, Y: yv})
	}
	return out
}

// addLine adds a line (skipped when empty) and its legend entry, and
// notes it in rec (nil: nowhere) for the page's readout.
func addLine(rec *recorder, p *plot.Plot, label string, pts plotter.XYs, c color.Color, dashed bool) {
	if len(pts) == 0 {
		return
	}
	style := "line"
	if dashed {
		style = "dash"
	}
	rec.add(p, label, pts, c, style)
	l, err := plotter.NewLine(pts)
	if err != nil {
		return // cannot happen: series drops NaN and Inf
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
}

// headroom makes room above the data for the legend: the legend has no
// background, so it must not sit on the lines.
func headroom(p *plot.Plot, ymax float64, entries int) {
	if ymax <= 0 || math.IsNaN(ymax) {
		ymax = 1
	}
	p.Y.Min = 0
	p.Y.Max = ymax * (1.12 + 0.1*float64(entries))
}

func maxY(sets ...plotter.XYs) float64 {
	m := 0.0
	for _, s := range sets {
		for _, p := range s {
			m = max(m, p.Y)
		}
	}
	return m
}

// timelineNotes says which of the timeline's optional panels are left out
// and why, one sentence each: a panel of an empty or all-zero series tells
// nothing a line of text cannot.
func timelineNotes(ws []correlate.Window) (kv, preempt bool, notes []string) {
	scraped := false
	anyPreempt, anyKV := false, false
	for i := range ws {
		w := &ws[i]
		if !math.IsNaN(w.KVUsagePerc) {
			anyKV = true
			kv = kv || w.KVUsagePerc > 0
		}
		if !math.IsNaN(w.Running) || !math.IsNaN(w.Waiting) || !math.IsNaN(w.KVUsagePerc) || !math.IsNaN(w.Preemptions) {
			scraped = true
		}
		if !math.IsNaN(w.Preemptions) {
			anyPreempt = true
			preempt = preempt || w.Preemptions > 0
		}
	}
	switch {
	case len(ws) == 0:
	case !scraped:
		notes = append(notes, "No /metrics page was scraped: no KV-cache, queue or preemption panel; the timeline holds the client's figures only.")
	default:
		switch {
		case !anyKV:
			notes = append(notes, "The server exports no KV-cache usage: no panel for it.")
		case !kv:
			notes = append(notes, "The server's KV-cache usage gauge read 0 % in every scrape (it does not measure this server's cache): no panel for it.")
		}
		switch {
		case !anyPreempt:
			notes = append(notes, "The server exports no preemption counter: no panel for it.")
		case !preempt:
			notes = append(notes, "The server preempted no request: no panel for preemptions.")
		}
	}
	return kv, preempt, notes
}

// timelineNoteList is the timeline's notes: its panels left out, and
// the per-GPU panels when the run read no GPU telemetry.
func timelineNoteList(ws []correlate.Window, gpus []correlate.GPUSeries) []string {
	_, _, notes := timelineNotes(ws)
	if len(ws) > 0 && len(gpus) == 0 {
		notes = append(notes, noGPUNote)
	}
	return notes
}

// drawTimeline draws stacked panels on one time axis: output tok/s, each
// finished request's TTFT and E2E by the time it was sent, requests
// running, waiting and in flight, and, when they hold data, KV-cache
// usage and preemptions. The stages are named under the time axis and
// the notes (panels left out) are written at the bottom.
func drawTimeline(c draw.Canvas, rec *recorder, ws []correlate.Window, gpus []correlate.GPUSeries, names map[int]string, lat *report.Scope) {
	t := func(w *correlate.Window) float64 { return midS(w) }
	var x0, x1 float64
	if len(ws) > 0 {
		x0, x1 = ws[0].From.Seconds(), ws[len(ws)-1].To.Seconds()
	}
	hasKV, hasPreempt, _ := timelineNotes(ws)
	notes := timelineNoteList(ws, gpus)

	tok := newPlot("Timeline"+stageTitle(ws, names), "", "output tok/s")
	client := series(ws, t, func(w *correlate.Window) float64 { return w.OutputTokensPerSec })
	server := series(ws, t, func(w *correlate.Window) float64 { return w.ServerTokensPerSec })
	addLine(rec, tok, "client (chunks received)", client, colour(0), false)
	addLine(rec, tok, "server (generation counter)", server, colour(1), true)
	headroom(tok, maxY(client, server), 2)
	tok.Y.Tick.Marker = niceTicks{}

	panels := []*plot.Plot{tok, latencyOverTime(rec, lat)}
	panelNames := []string{"output tok/s", "latency (ms)"}

	rq := newPlot("", "", "requests")
	run := series(ws, t, func(w *correlate.Window) float64 { return w.Running })
	wait := series(ws, t, func(w *correlate.Window) float64 { return w.Waiting })
	fl := series(ws, t, func(w *correlate.Window) float64 { return w.InFlight })
	addLine(rec, rq, "running (server)", run, colour(0), false)
	addLine(rec, rq, "waiting (server)", wait, colour(1), false)
	addLine(rec, rq, "in flight (client)", fl, grey(), true)
	headroom(rq, maxY(run, wait, fl), 3)
	rq.Y.Tick.Marker = niceTicks{integer: true}
	panels = append(panels, rq)
	panelNames = append(panelNames, "requests")
	gp, gn, gmax := gpuPanels(rec, gpus)
	gpuFrom := len(panels)
	panels, panelNames = append(panels, gp...), append(panelNames, gn...)

	if hasKV {
		kv := newPlot("", "", "KV cache (%)")
		kvs := series(ws, t, func(w *correlate.Window) float64 { return w.KVUsagePerc })
		addLine(rec, kv, "", kvs, colour(2), false) // the panel names it
		kv.Y.Min, kv.Y.Max = 0, max(100, maxY(kvs))
		panels = append(panels, kv)
		panelNames = append(panelNames, "KV cache (%)")
	}
	if hasPreempt {
		pre := newPlot("", "", "preemptions")
		var steps plotter.XYs
		for _, w := range ws {
			if math.IsNaN(w.Preemptions) {
				continue
			}
			steps = append(steps, plotter.XY{X: w.From.Seconds(), Y: w.Preemptions}, plotter.XY{X: w.To.Seconds(), Y: w.Preemptions})
		}
		addLine(rec, pre, "", steps, colour(3), false)
		pre.Y.Min, pre.Y.Max = 0, max(1, maxY(steps)*1.15)
		pre.Y.Tick.Marker = niceTicks{integer: true}
		panels = append(panels, pre)
		panelNames = append(panelNames, "preemptions")
	}
	panels[len(panels)-1].X.Label.Text = "time since start (s)"

	rows := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		if x1 > x0 {
			p.X.Min, p.X.Max = x0, x1
		}
		p.X.Tick.Marker = niceTicks{}
		stageLines(p, ws)
		rows[i] = []*plot.Plot{p}
	}
	// Room under the plots for the stage band and the notes.
	band := vg.Points(16)
	noteH := vg.Points(13) * vg.Length(len(notes))
	area := c
	area.Min.Y += band + noteH + vg.Points(4)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(4),
		PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(6)}
	canvases := plot.Align(rows, tiles, area)
	if len(gp) > 0 {
		// The GPU panels' tops follow their legends' height in the panel;
		// aligned again for the tick labels that moves.
		for i, p := range gp {
			fitLegend(p, p.DataCanvas(canvases[gpuFrom+i][0]), gmax[i])
		}
		canvases = plot.Align(rows, tiles, area)
	}
	for i, p := range panels {
		p.Draw(canvases[i][0])
		rec.record(c.Max.Y, p, canvases[i][0], "time since start (s)", panelNames[i])
	}
	last := panels[len(panels)-1]
	dc := last.DataCanvas(canvases[len(panels)-1][0])
	drawStageBand(c, dc, last, ws, names, area.Min.Y-band)
	rec.stages(len(panels), stageSpans(ws, names), c.Max.Y-area.Min.Y, c.Max.Y-(area.Min.Y-band)+vg.Points(3))
	style := draw.TextStyle{Color: color.Black, Font: font.From(plotFont(), 9), Handler: last.TextHandler}
	for i, n := range notes {
		c.FillText(style, vg.Point{X: dc.Min.X, Y: area.Min.Y - band - vg.Points(12)*vg.Length(i+1)}, n)
	}
}

// maxMarks bounds the requests the latency panel draws one by one: past
// it, each series is drawn as per-bin quantile bands, so that the plots
// and report.html keep their size whatever the number of requests.
const maxMarks = 5000

// bandBins is how many time bins the bands have across the run.
const bandBins = 150

// latencyOverTime is the timeline's panel of each finished request's TTFT
// and E2E by the time it was sent: where overload begins, TTFT climbs.
// With more than maxMarks requests a series is drawn as its median and
// p10–p90 band per time bin instead of a mark per request.
func latencyOverTime(rec *recorder, lat *report.Scope) *plot.Plot {
	// No axis label: gonum centres it on the arithmetic middle of the
	// range, far up a log axis, and pads the panel to fit it; the ticks
	// carry their units instead.
	p := newPlot("", "", "")
	lo, hi := math.Inf(1), 0.0
	entries := 0
	for k, m := range []struct{ metric, label string }{{"ttft_ms", "TTFT"}, {"e2e_ms", "E2E"}} {
		sent, vals := lat.OverTime(m.metric)
		var pts plotter.XYs
		for i := range sent {
			if vals[i] > 0 { // a log axis cannot show 0
				pts = append(pts, plotter.XY{X: sent[i], Y: vals[i]})
				lo, hi = min(lo, vals[i]), max(hi, vals[i])
			}
		}
		if len(pts) == 0 {
			continue
		}
		if len(pts) > maxMarks {
			addBands(rec, p, pts, m.label, colour(k), lat.Sampled())
			entries++
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			continue
		}
		sc.GlyphStyle.Color = colour(k)
		sc.GlyphStyle.Radius = vg.Points(1.3)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(m.label+" (by the time the request was sent)", sc)
		rec.add(p, m.label, pts, colour(k), "dots")
		entries++
	}
	if entries == 0 {
		p.Title.Text = "(no request finished)"
		return p
	}
	if hi/lo >= 20 {
		// Room above for the legend: a factor per entry on a log axis.
		p.Y.Min, p.Y.Max = lo/1.5, hi*math.Pow(4, float64(entries))
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = msTicks{inRange{plot.LogTicks{Prec: -1}}}
	} else {
		headroom(p, hi, entries)
		p.Y.Tick.Marker = msTicks{niceTicks{}}
	}
	return p
}

// addBands draws pts (time, value) as the median of each of bandBins time
// bins, a line, over the band between their 10th and 90th percentiles.
// sampled, when not "", says the points are a sample of the requests.
func addBands(rec *recorder, p *plot.Plot, pts plotter.XYs, label string, c color.Color, sampled string) {
	qs := binQuantiles(pts, bandBins, []float64{0.1, 0.5, 0.9})
	if len(qs) == 0 {
		return
	}
	var band, mid plotter.XYs
	for _, b := range qs {
		band = append(band, plotter.XY{X: b.x, Y: b.q[0]})
		mid = append(mid, plotter.XY{X: b.x, Y: b.q[1]})
	}
	for i := len(qs) - 1; i >= 0; i-- {
		band = append(band, plotter.XY{X: qs[i].x, Y: qs[i].q[2]})
	}
	poly, err := plotter.NewPolygon(band)
	if err != nil {
		return
	}
	r, g, bl, _ := c.RGBA()
	poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 70}
	poly.LineStyle.Width = 0
	line, err := plotter.NewLine(mid)
	if err != nil {
		return
	}
	line.Color, line.Width = c, vg.Points(1.2)
	p.Add(poly, line)
	what := fmt.Sprintf("%s median, p10–p90 band over %d requests", label, len(pts))
	if sampled != "" {
		what += " (a sample)"
	}
	p.Legend.Add(what, line, poly)
	rec.add(p, label+" median", mid, c, "line")
}

// binQuantile is one time bin's quantiles.
type binQuantile struct {
	x float64   // the bin's middle
	q []float64 // the quantiles asked for, in order
}

// binQuantiles splits pts into n equal bins of X and returns, for each
// bin holding at least 3 points, the quantiles qs of their Y (nearest
// rank), in X order.
func binQuantiles(pts plotter.XYs, n int, qs []float64) []binQuantile {
	x0, x1 := math.Inf(1), math.Inf(-1)
	for _, pt := range pts {
		x0, x1 = min(x0, pt.X), max(x1, pt.X)
	}
	w := (x1 - x0) / float64(n)
	if !(w > 0) {
		w, n = 1, 1
	}
	bins := make([][]float64, n)
	for _, pt := range pts {
		i := min(int((pt.X-x0)/w), n-1)
		bins[i] = append(bins[i], pt.Y)
	}
	var out []binQuantile
	for i, ys := range bins {
		if len(ys) < 3 {
			continue
		}
		slices.Sort(ys)
		b := binQuantile{x: x0 + (float64(i)+0.5)*w}
		for _, q := range qs {
			b.q = append(b.q, ys[max(int(math.Ceil(q*float64(len(ys))))-1, 0)])
		}
		out = append(out, b)
	}
	return out
}

// drawStageBand names the stages under the time axis of the data area dc
// (of plot p): each stage's name centred on its span, between ticks at
// its ends, at height y of canvas c.
func drawStageBand(c, dc draw.Canvas, p *plot.Plot, ws []correlate.Window, names map[int]string, y vg.Length) {
	spans := correlate.StageSpans(ws)
	if len(spans) == 0 {
		return
	}
	xf, _ := p.Transforms(&dc)
	style := draw.TextStyle{Color: color.Black, Font: font.From(plotFont(), 9), XAlign: draw.XCenter, Handler: p.TextHandler}
	line := draw.LineStyle{Color: grey(), Width: vg.Points(0.8)}
	for _, i := range slices.Sorted(maps.Keys(spans)) {
		a, b := xf(spans[i][0].Seconds()), xf(spans[i][1].Seconds())
		a, b = max(a, dc.Min.X), min(b, dc.Max.X)
		if b <= a {
			continue
		}
		name := names[i]
		if name == "" {
			name = fmt.Sprintf("stage-%d", i)
		}
		c.StrokeLine2(line, a+vg.Points(2), y+vg.Points(12), b-vg.Points(2), y+vg.Points(12))
		c.StrokeLine2(line, a+vg.Points(2), y+vg.Points(8), a+vg.Points(2), y+vg.Points(14))
		c.StrokeLine2(line, b-vg.Points(2), y+vg.Points(8), b-vg.Points(2), y+vg.Points(14))
		c.FillText(style, vg.Point{X: (a + b) / 2, Y: y}, "stage "+name)
	}
}

// stageSpans are the stages' names and spans, in seconds, for the page's
// zoom.
func stageSpans(ws []correlate.Window, names map[int]string) []Span {
	spans := correlate.StageSpans(ws)
	var out []Span
	for _, i := range slices.Sorted(maps.Keys(spans)) {
		name := names[i]
		if name == "" {
			name = fmt.Sprintf("stage-%d", i)
		}
		out = append(out, Span{Name: name, From: spans[i][0].Seconds(), To: spans[i][1].Seconds()})
	}
	return out
}

// stageTitle names the stages and their spans for the timeline's title, so
// no text has to fit between the stage boundary lines.
func stageTitle(ws []correlate.Window, names map[int]string) string {
	spans := correlate.StageSpans(ws)
	if len(spans) == 0 {
		return ""
	}
	var parts []string
	for _, i := range slices.Sorted(maps.Keys(spans)) {
		s := spans[i]
		name := names[i]
		if name == "" {
			name = fmt.Sprintf("stage-%d", i)
		}
		parts = append(parts, fmt.Sprintf("%s %.0f–%.0f s", name, s[0].Seconds(), s[1].Seconds()))
	}
	return " · stages: " + strings.Join(parts, ", ")
}

// stageLines draws a dotted vertical line where each stage after the
// first begins.
func stageLines(p *plot.Plot, ws []correlate.Window) {
	spans := correlate.StageSpans(ws)
	keys := slices.Sorted(maps.Keys(spans))
	if len(keys) < 2 {
		return
	}
	for _, i := range keys[1:] {
		x := spans[i][0].Seconds()
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
		if err != nil {
			continue
		}
		l.Color = grey()
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
		p.Add(l)
	}
}

// decayAxes returns the ranges of the decay plot's axes: from the steady
// windows (the law's evidence) when there are at least three, else from
// every window with something in flight, so a window where streams started
// or stalled does not stretch the axes over empty space. The context axis
// starts at zero when the data spans most of it (the decay story).
func decayAxes(steady, other []correlate.Window) (x0, x1, y1 float64) {
	base := steady
	if len(base) < 3 {
		base = append(slices.Clone(steady), other...)
	}
	x0, x1 = math.Inf(1), 0
	for _, w := range base {
		if w.ContextSum > 0 {
			x0, x1 = min(x0, w.ContextSum), max(x1, w.ContextSum)
		}
		y1 = max(y1, w.OutputTokensPerSec)
	}
	if x1 == 0 {
		return 0, 1, max(y1, 1)
	}
	pad := max((x1-x0)*0.08, x1*0.01)
	x0, x1 = max(0, x0-pad), x1+pad
	if x0 < 0.3*x1 {
		x0 = 0
	}
	return x0, x1, y1 * 1.1
}

// drawDecay scatters each window's output tok/s against the context in
// flight, steady windows coloured by stage, and draws each stage's fitted
// law (scaled to its stream count) over the points. When KV-cache usage
// was scraped, a second panel below shows it on the same context axis.
func drawDecay(c draw.Canvas, rec *recorder, ws []correlate.Window, names map[int]string, fits map[int]*decodelaw.Fit, pooled map[int]bool) {
	d := newDecayScene(ws, names)
	d.rec = rec
	d.points()
	d.curves(fits, pooled)
	d.draw(c, rec)
}

// decayScene is the decay plot being drawn: its panels (throughput, and
// KV usage when the server exported it), the windows by kind, the axes'
// extent and the legend's entry count.
type decayScene struct {
	p, kv         *plot.Plot
	other, steady []correlate.Window
	byStage       map[int][]correlate.Window
	names         map[int]string
	x0, x1, y1    float64
	entries       int
	rec           *recorder
}

func newDecayScene(ws []correlate.Window, names map[int]string) *decayScene {
	d := &decayScene{p: newPlot("Throughput decay: output tok/s vs context in flight", "", "output tok/s (client)"),
		byStage: map[int][]correlate.Window{}, names: names}
	hasKV := false
	for _, w := range ws {
		if w.InFlight <= 0 {
			continue
		}
		hasKV = hasKV || w.KVUsagePerc > 0 // NaN (not exported) and all-zero series get no panel
		if w.Steady {
			d.byStage[w.Stage] = append(d.byStage[w.Stage], w)
			d.steady = append(d.steady, w)
		} else {
			d.other = append(d.other, w)
		}
	}
	d.x0, d.x1, d.y1 = decayAxes(d.steady, d.other)
	const xLabel = "context in flight (tokens: prompt + generated so far, summed over streams)"
	if hasKV {
		d.kv = newPlot("", xLabel, "KV cache (%)")
		d.kv.Y.Min, d.kv.Y.Max = 0, 100
		d.kv.Y.Tick.Marker = percentTicks{}
	} else {
		d.p.X.Label.Text = xLabel
	}
	return d
}

func (d *decayScene) stageName(st int) string {
	if n := d.names[st]; n != "" {
		return n
	}
	return fmt.Sprintf("stage-%d", st)
}

// inside keeps the points within the axes and counts those off them.
func (d *decayScene) inside(pts plotter.XYs) (in plotter.XYs, off int) {
	for _, q := range pts {
		if q.X >= d.x0 && q.X <= d.x1 && q.Y <= d.y1 {
			in = append(in, q)
		} else {
			off++
		}
	}
	return in, off
}

// scatter adds dots to pl, and a legend entry when label is not empty;
// name names them for the readout.
func (d *decayScene) scatter(pl *plot.Plot, pts plotter.XYs, col color.Color, r vg.Length, label, name string) {
	d.rec.add(pl, name, pts, col, "dots")
	shown := pts
	if len(shown) == 0 {
		// Every point is off the axes: the legend still says so.
		shown = plotter.XYs{{X: d.x0, Y: 0}}
	}
	sc, err := plotter.NewScatter(shown)
	if err != nil {
		return
	}
	sc.GlyphStyle.Color = col
	sc.GlyphStyle.Radius = r
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	if len(pts) > 0 {
		pl.Add(sc)
	}
	if label != "" {
		pl.Legend.Add(label, sc)
		d.entries++
	}
}

// points draws every stage's dots first, so that no fitted curve vanishes
// under another stage's dots.
func (d *decayScene) points() {
	ctx := func(w *correlate.Window) float64 { return w.ContextSum }
	tps := func(w *correlate.Window) float64 { return w.OutputTokensPerSec }
	kvOf := func(w *correlate.Window) float64 { return w.KVUsagePerc }
	if pts, off := d.inside(series(d.other, ctx, tps)); len(pts)+off > 0 {
		label := "windows where streams started or ended"
		if off > 0 {
			label += fmt.Sprintf(" (%d off the axes, not drawn)", off)
		}
		d.scatter(d.p, pts, grey(), vg.Points(1.5), label, "starting or ending")
		if d.kv != nil {
			k, _ := d.inside(series(d.other, ctx, kvOf))
			d.scatter(d.kv, k, grey(), vg.Points(1.5), "", "starting or ending")
		}
	}
	for k, st := range slices.Sorted(maps.Keys(d.byStage)) {
		pts, off := d.inside(series(d.byStage[st], ctx, tps))
		label := d.stageName(st) + ": one dot per window of steady load"
		if off > 0 {
			label += fmt.Sprintf(" (%d off the axes, not drawn)", off)
		}
		d.scatter(d.p, pts, colour(k), vg.Points(2.2), label, d.stageName(st))
		if d.kv != nil {
			k2, _ := d.inside(series(d.byStage[st], ctx, kvOf))
			d.scatter(d.kv, k2, colour(k), vg.Points(2.2), "", d.stageName(st))
		}
	}
}

// curves draws each stage's fitted decode law over its points' range.
func (d *decayScene) curves(fits map[int]*decodelaw.Fit, pooled map[int]bool) {
	x0, x1 := d.x0, d.x1
	for k, st := range slices.Sorted(maps.Keys(d.byStage)) {
		f := fits[st]
		if f == nil || f.Streams <= 0 {
			continue
		}
		var curve plotter.XYs
		lo, hi := max(f.ContextMin, x0), min(f.ContextMax, x1)
		if lo == hi {
			// One context (a single window): a short stretch of the law
			// either side, so it shows as a line.
			lo, hi = max(x0, lo-(x1-x0)*0.04), min(x1, hi+(x1-x0)*0.04)
		}
		for i := 0; i <= 60; i++ {
			x := lo + (hi-lo)*float64(i)/60
			// Within the points' range: the law drawn where it reaches
			// above them would push the axis up and under the legend.
			if y := f.Streams * f.PerStream(x); !math.IsNaN(y) && !math.IsInf(y, 0) && y <= d.y1 {
				curve = append(curve, plotter.XY{X: x, Y: y})
			}
		}
		how := "fitted"
		if pooled[st] {
			how = "law fitted over all stages"
		}
		addLine(d.rec, d.p, fmt.Sprintf("%s, %s: %s streams, each token %s ms + %s ms per 1,000 tokens of context (R² %.2f)",
			d.stageName(st), how, sig(f.Streams), sig(f.InterceptMS), sig(f.SlopeNSPerToken/1000), f.R2), curve, colour(k), true)
		d.entries++
	}
}

// draw lays the panels out on c, one above the other, and records them.
func (d *decayScene) draw(c draw.Canvas, rec *recorder) {
	panels := []*plot.Plot{d.p}
	if d.kv != nil {
		panels = append(panels, d.kv)
	}
	for _, pl := range panels {
		pl.X.Min, pl.X.Max = d.x0, d.x1
		pl.X.Tick.Marker = niceTicks{}
	}
	d.p.Y.Tick.Marker = niceTicks{}
	headroom(d.p, d.y1, d.entries)
	rows := make([][]*plot.Plot, len(panels))
	for i, pl := range panels {
		rows[i] = []*plot.Plot{pl}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(4),
		PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(8)}
	canvases := plot.Align(rows, tiles, c)
	for i, pl := range panels {
		pl.Draw(canvases[i][0])
		rec.record(c.Max.Y, pl, canvases[i][0], "context in flight (tokens)", []string{"output tok/s", "KV cache (%)"}[i])
	}
}

// sig formats a fitted figure with three significant digits, without an
// exponent.
func sig(v float64) string {
	if math.Abs(v) >= 1000 {
		return report.FormatNumber(v)
	}
	return strconv.FormatFloat(v, 'f', max(0, 2-int(math.Floor(math.Log10(math.Abs(v)+1e-12)))), 64)
}

// minCDFSamples is the fewest samples a CDF is drawn from: below it the
// curve is a staircase of single requests that reads as a distribution.
const minCDFSamples = 20

// gapFloorUS is the shortest gap the ITL plot shows, in microseconds:
// shorter gaps are chunks read from the socket together, which the client
// stamps microseconds apart; drawn at their true value they stretch the
// log axis over decades that say nothing about the server.
const gapFloorUS = 10

// drawLatency draws the CDFs of TTFT and ITL side by side, one line per
// stage with at least minCDFSamples samples (and overall with several
// stages), on log-scaled latency axes that end at 100 %.
func drawLatency(c draw.Canvas, rec *recorder, a *report.Aggregate, names map[int]string) {
	panels := []*plot.Plot{
		newPlot("TTFT distribution", "time to first token (ms, log scale)", "requests ≤ x (%)"),
		newPlot("ITL distribution", "inter-token latency (ms, log scale)", "tokens ≤ x (%)"),
	}
	overall := func(metric string) *hdrhistogram.Histogram { return a.Histogram(-1, metric) }
	var notes []string
	for k, metric := range []string{"ttft_ms", "itl_ms"} {
		p := panels[k]
		// The legend keeps the top left corner, which a CDF leaves empty
		// (it rises from the bottom left), so the axis can end at 100 %.
		idx := a.StageIndexes()
		lines := 0
		lo, hi := math.Inf(1), 0.0
		all := overall(metric)
		floor := int64(1)
		if metric == "itl_ms" {
			floor = gapFloorUS
			if n := all.TotalCount(); n > 0 {
				if below := countBelow(all, gapFloorUS); below > 0 {
					notes = append(notes, fmt.Sprintf("ITL: %s of the gaps are under 10 µs (chunks read from the socket together); they are drawn at 10 µs.",
						report.FormatPercent(float64(below)/float64(n))))
				}
			}
		}
		var few []string
		add := func(label string, h *hdrhistogram.Histogram, col color.Color, dashed bool) {
			if n := h.TotalCount(); n > 0 && n < minCDFSamples {
				few = append(few, fmt.Sprintf("%s: %d", label, n))
				return
			}
			pts := cdf(h, all, floor)
			if len(pts) == 0 {
				return
			}
			lo, hi = min(lo, pts[0].X), max(hi, pts[len(pts)-1].X)
			addLine(rec, p, label, pts, col, dashed)
			lines++
		}
		for j, i := range idx {
			name := names[i]
			if name == "" {
				name = fmt.Sprintf("stage-%d", i)
			}
			add(name, a.Histogram(i, metric), colour(j), false)
		}
		if len(idx) > 1 {
			add("overall", all, colour(6), true)
		}
		if len(few) > 0 {
			notes = append(notes, fmt.Sprintf("%s: no curve from fewer than %d samples (%s).", p.Title.Text[:strings.Index(p.Title.Text, " ")],
				minCDFSamples, strings.Join(few, ", ")))
		}
		p.Y.Min, p.Y.Max = 0, 100
		if lines == 0 {
			p.Title.Text += " (no data)"
			continue
		}
		// Log scale only with positive bounds: plot.LogScale panics on 0.
		p.X.Min, p.X.Max = lo/1.5, hi*1.5
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = inRange{plot.LogTicks{Prec: -1}}
		if hi/lo < 30 {
			// Less than a decade and a half: decade ticks would leave
			// one label or none.
			p.X.Tick.Marker = niceTicks{}
		}
		p.Y.Tick.Marker = percentTicks{}
	}
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadTop: vg.Points(6), PadBottom: vg.Points(4),
		PadLeft: vg.Points(6), PadRight: vg.Points(12), PadX: vg.Points(24)}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, drawNotes(c, notes))
	for i, p := range panels {
		p.Draw(canvases[0][i])
		rec.record(c.Max.Y, p, canvases[0][i], []string{"TTFT (ms)", "ITL (ms)"}[i], "share ≤ x (%)")
	}
}

// drawNotes writes notes, one line each, at the bottom left of c and
// returns the part of c above them.
func drawNotes(c draw.Canvas, notes []string) draw.Canvas {
	if len(notes) == 0 {
		return c
	}
	style := draw.TextStyle{Color: color.Black, Font: font.From(plotFont(), 9), Handler: plot.New().TextHandler}
	line := vg.Points(12)
	for i, n := range notes {
		c.FillText(style, vg.Point{X: c.Min.X + vg.Points(8), Y: c.Min.Y + vg.Points(4) + line*vg.Length(len(notes)-1-i)}, n)
	}
	c.Min.Y += line*vg.Length(len(notes)) + vg.Points(6)
	return c
}

// countBelow counts the values of h (microseconds) below v.
func countBelow(h *hdrhistogram.Histogram, v int64) int64 {
	var n int64
	for _, b := range h.Distribution() {
		if b.To <= v {
			n += b.Count
		}
	}
	return n
}

// inRange keeps the ticks of its Ticker that fall within the axis: gonum's
// LogTicks runs on to the next power of ten, and a label beyond the axis
// still takes room, squeezing the plot.
type inRange struct{ plot.Ticker }

func (t inRange) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, k := range t.Ticker.Ticks(lo, hi) {
		if k.Value >= lo && k.Value <= hi {
			out = append(out, k)
		}
	}
	return out
}

// msTicks labels the ticks of a millisecond axis in the units a person
// reads ("10 ms", "1 s", "2 min").
type msTicks struct{ plot.Ticker }

func (t msTicks) Ticks(lo, hi float64) []plot.Tick {
	ks := t.Ticker.Ticks(lo, hi)
	for i := range ks {
		if ks[i].Label != "" {
			ks[i].Label = report.FormatSeconds(ks[i].Value / 1000)
		}
	}
	return ks
}

// percentTicks labels 0, 25, 50, 75 and 100 only, leaving the space above
// 100 % to the legend.
type percentTicks struct{}

func (percentTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for v := 0.0; v <= 100; v += 25 {
		out = append(out, plot.Tick{Value: v, Label: fmt.Sprintf("%.0f", v)})
	}
	return out
}

// cdf returns the cumulative distribution of a histogram in microseconds as
// (milliseconds, percent) points. Values below the overall histogram's
// 0.1th percentile, or below minUS, are folded into the first point, so a
// few near-zero gaps (tokens arriving in one read) do not stretch the log
// axis over decades of empty space. The last point is at 100 %.
func cdf(h, overall *hdrhistogram.Histogram, minUS int64) plotter.XYs {
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	floor := max(overall.ValueAtQuantile(0.1), minUS, 1)
	var out plotter.XYs
	var cum int64
	for _, b := range h.Distribution() {
		if b.Count == 0 {
			continue
		}
		cum += b.Count
		if b.To < floor {
			continue
		}
		if len(out) == 0 {
			out = append(out, plotter.XY{X: float64(max(b.From, floor)) / 1e3, Y: 100 * float64(cum-b.Count) / float64(n)})
		}
		out = append(out, plotter.XY{X: float64(max(b.To, 1)) / 1e3, Y: 100 * float64(cum) / float64(n)})
	}
	return out
}

// drawStages draws grouped bars of p50 and p99 per stage for TTFT and ITL.
func drawStages(c draw.Canvas, rec *recorder, stages []report.Stage) {
	panels := []*plot.Plot{
		newPlot("TTFT per stage", "", "time to first token (ms)"),
		newPlot("ITL per stage", "", "inter-token latency (ms)"),
	}
	names := make([]string, len(stages))
	for i, st := range stages {
		names[i] = st.Name
	}
	for k, pick := range []func(*report.Stage) report.Dist{
		func(s *report.Stage) report.Dist { return s.TTFT },
		func(s *report.Stage) report.Dist { return s.ITL },
	} {
		p := panels[k]
		p.Legend.Left = false
		var p50, p99 plotter.Values
		var dists []report.Dist
		for i := range stages {
			d := pick(&stages[i])
			dists = append(dists, d)
			p50 = append(p50, d.P50)
			p99 = append(p99, d.P99)
		}
		if len(stages) == 0 {
			p.Title.Text += " (no stages)"
			continue
		}
		w := vg.Points(min(40, 300/float64(len(stages))))
		for j, vs := range []plotter.Values{p50, p99} {
			b, err := plotter.NewBarChart(vs, w)
			if err != nil {
				continue
			}
			b.Color = colour(j)
			b.LineStyle.Width = 0
			b.Offset = (vg.Length(j) - 0.5) * w
			p.Add(b)
			p.Legend.Add([]string{"p50", "p99"}[j], b)
			var at plotter.XYs
			for i, v := range vs {
				at = append(at, plotter.XY{X: float64(i), Y: v})
			}
			rec.add(p, []string{"p50", "p99"}[j], at, colour(j), "bars")
			rec.offset(p, b.Offset)
			few := addErrorBars(p, dists, []string{"p50", "p99"}[j], b.Offset)
			// Each bar's value above it: a p99 twenty times the p50
			// leaves the p50 bar a sliver a reader cannot measure.
			var xy plotter.XYLabels
			for i, v := range vs {
				xy.XYs = append(xy.XYs, plotter.XY{X: float64(i), Y: v})
				xy.Labels = append(xy.Labels, report.FormatLatency(v, 1)+" ms")
				if v >= 10_000 {
					xy.Labels[i] = report.FormatLatency(v, 1)
				}
				if few[i] {
					xy.Labels[i] += " (few)"
				}
			}
			if l, err := plotter.NewLabels(xy); err == nil {
				for i := range l.TextStyle {
					l.TextStyle[i].Font = font.From(plotFont(), 8)
					l.TextStyle[i].XAlign = draw.XCenter
				}
				l.Offset = vg.Point{X: b.Offset, Y: vg.Points(2)}
				p.Add(l)
			}
		}
		p.NominalX(names...)
		if len(stages) > 4 {
			p.X.Tick.Label.Rotation = math.Pi / 6
			p.X.Tick.Label.XAlign = draw.XRight
			p.X.Tick.Label.YAlign = draw.YTop
		}
		ymax := 0.0
		for i, v := range p99 {
			ymax = max(ymax, v)
			if _, hi, ok := dists[i].Interval("p99"); ok {
				ymax = max(ymax, hi)
			}
		}
		headroom(p, ymax, 2)
		p.Title.Text += " (bars: 95 % intervals)"
		p.Y.Tick.Marker = niceTicks{}
	}
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadTop: vg.Points(6), PadBottom: vg.Points(4),
		PadLeft: vg.Points(6), PadRight: vg.Points(12), PadX: vg.Points(24)}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, c)
	for i, p := range panels {
		p.Draw(canvases[0][i])
		rec.record(c.Max.Y, p, canvases[0][i], "", []string{"TTFT (ms)", "ITL (ms)"}[i])
		if rec != nil {
			rec.panels[len(rec.panels)-1].XLabels = names
		}
	}
}

// niceTicks labels five to ten round values (1, 2 or 5 × 10ⁿ apart) with
// thousands separators, and puts an unlabelled tick between them.
type niceTicks struct {
	integer bool // counts: never a step below 1
}

func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: report.FormatNumber(lo)}}
	}
	raw := (hi - lo) / 10
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if t.integer {
		step = max(step, 1)
	}
	decimals := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	var out []plot.Tick
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if v == 0 {
			v = 0 // not −0
		}
		label := report.FormatNumber(v)
		if step < 1 {
			label = strconv.FormatFloat(v, 'f', decimals, 64)
			label = strings.TrimRight(strings.TrimRight(label, "0"), ".")
			if label == "" || label == "-" {
				label = "0"
			}
		}
		out = append(out, plot.Tick{Value: v, Label: label})
		if mid := v + step/2; mid <= hi {
			out = append(out, plot.Tick{Value: mid})
		}
	}
	return out
}

// addErrorBars draws each stage's 95 % interval of stat over its bar (at
// the bar's offset) and reports which stages had too few samples for one.
func addErrorBars(p *plot.Plot, dists []report.Dist, stat string, offset vg.Length) (few []bool) {
	e := &errorBars{offset: offset}
	few = make([]bool, len(dists))
	for i, d := range dists {
		lo, hi, ok := d.Interval(stat)
		if !ok {
			few[i] = d.Count > 0
			continue
		}
		e.xs, e.lo, e.hi = append(e.xs, float64(i)), append(e.lo, lo), append(e.hi, hi)
	}
	if len(e.xs) > 0 {
		p.Add(e)
	}
	return few
}

// errorBars are vertical interval bars at category positions, shifted by
// offset as a bar chart's bars are.
type errorBars struct {
	xs, lo, hi []float64
	offset     vg.Length
}

// Plot implements plot.Plotter.
func (e *errorBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	style := draw.LineStyle{Color: color.Gray{Y: 40}, Width: vg.Points(0.8)}
	capW := vg.Points(3)
	for i, x := range e.xs {
		px := trX(x) + e.offset
		y0, y1 := trY(e.lo[i]), trY(e.hi[i])
		c.StrokeLine2(style, px, y0, px, y1)
		c.StrokeLine2(style, px-capW, y0, px+capW, y0)
		c.StrokeLine2(style, px-capW, y1, px+capW, y1)
	}
}

// DataRange implements plot.DataRanger: the intervals' ends.
func (e *errorBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, x := range e.xs {
		xmin, xmax = min(xmin, x), max(xmax, x)
		ymin, ymax = min(ymin, e.lo[i]), max(ymax, e.hi[i])
	}
	return xmin, xmax, ymin, ymax
}

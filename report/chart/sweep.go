package chart

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SweepPlot is the trade-off plot of a server-setting sweep: TTFT and ITL
// against the swept value, and throughput on its own panel. A latency
// panel draws the p50 and the statistics its budgets judge (the p99 when
// no budget names another), so each budget line has its figure beside it.
type SweepPlot struct {
	Title  string
	XLabel string // the parameter's name, or the parameters' names
	// Numeric places the points at their X values (on a log₂ axis when
	// they span a factor of 8 or more); otherwise they are evenly spaced
	// and labelled with Label.
	Numeric bool
	Points  []SweepPlotPoint
	// Recommended is the index of the recommended point, or -1.
	Recommended int
	// Budgets are the scenario's limits on the plotted figures, drawn as
	// horizontal lines on their panels.
	Budgets []SweepBudget
	// RecommendedLabel names the vertical line at Recommended
	// ("recommended", "capacity"); default "recommended".
	RecommendedLabel string
}

// SweepBudget is one budget drawn on a sweep plot.
type SweepBudget struct {
	Panel string  // "ttft", "itl" or "throughput"
	Stat  string  // the statistic judged: "p90", "p99", "mean", "max"; "" for throughput
	Name  string  // the legend entry: "TTFT p99 ≤ 200 ms"
	Limit float64 // ms, or output tokens/s
}

// SweepPlotPoint is one value's figures; latencies in milliseconds.
type SweepPlotPoint struct {
	Label   string
	X       float64 // the value, when the plot is Numeric
	Missing bool    // no figures (every run failed): shown as a gap
	// Pass is whether the value met the budgets (nil: no verdict): a
	// filled green or a red mark on the throughput panel.
	Pass *bool
	// Verdict is "inconclusive" when no budget was missed but some could
	// not be decided (an interval straddles its limit): an amber square
	// on the throughput panel instead of the red cross Pass false draws.
	Verdict string
	// CI holds the 95 % intervals drawn as error bars, [lo, hi], by panel
	// and stat as Stats ("ttft.p50", "itl.p99") and "throughput"; a
	// figure without one (too few samples) has no bar.
	CI map[string][2]float64

	TTFTP50, TTFTP99   float64
	ITLP50, ITLP99     float64
	OutputTokensPerSec float64
	// Stats are the other statistics the budgets judge, by panel and
	// stat ("ttft.p90"), in milliseconds.
	Stats map[string]float64
}

var (
	sweepBlue   = color.RGBA{0, 114, 178, 255} // Okabe–Ito blue
	sweepOrange = color.RGBA{213, 94, 0, 255}  // vermillion
	sweepGreen  = color.RGBA{0, 158, 115, 255} // bluish green
	sweepGrey   = color.RGBA{120, 120, 120, 255}
	sweepRed    = color.RGBA{200, 30, 30, 255}
	sweepAmber  = color.RGBA{230, 159, 0, 255} // Okabe–Ito orange
)

// Render draws the plot as PNG and SVG.
func (sp *SweepPlot) Render() (pngData, svgData []byte, err error) {
	if len(sp.Points) == 0 {
		return nil, nil, fmt.Errorf("sweep plot: no points")
	}
	ax := sp.axis()
	panels := []*plot.Plot{
		sp.panel("ttft", "TTFT (ms)", ax),
		sp.panel("itl", "ITL (ms)", ax),
		sp.throughput(ax),
	}
	panels[0].Title.Text = sp.Title
	if sp.hasCI() {
		panels[0].Title.Text += " (bars: 95 % intervals)"
	}
	panels[0].Title.TextStyle.Font.Size = vg.Points(13)
	for _, p := range panels[:2] {
		p.X.Label.Text = ""
	}
	const w, h = 10 * vg.Inch, 11 * vg.Inch
	paint := func(dc draw.Canvas) {
		tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6),
			PadLeft: vg.Points(6), PadRight: vg.Points(14), PadY: vg.Points(10)}
		grid := make([][]*plot.Plot, len(panels))
		for i, p := range panels {
			grid[i] = []*plot.Plot{p}
		}
		cs := plot.Align(grid, tiles, dc)
		for i, p := range panels {
			p.Draw(cs[i][0])
		}
	}
	if pngData, svgData, err = encode(w, h, paint); err != nil {
		return nil, nil, fmt.Errorf("sweep plot: %w", err)
	}
	return pngData, svgData, nil
}

// sweepAxis is the x axis of a sweep plot: each point's position, the
// tick marks (one per value), whether it is logarithmic, and its title.
type sweepAxis struct {
	xs    []float64
	ticks []plot.Tick
	log   bool
	title string
}

// axis places the points: at their values when Numeric, else evenly, each
// tick naming its value in compactTicks' short form.
func (sp *SweepPlot) axis() sweepAxis {
	ax := sweepAxis{xs: make([]float64, len(sp.Points)), ticks: make([]plot.Tick, len(sp.Points)), title: sp.XLabel}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, p := range sp.Points {
		ax.xs[i] = float64(i)
		if sp.Numeric {
			ax.xs[i] = p.X
			lo, hi = min(lo, p.X), max(hi, p.X)
		}
		ax.ticks[i] = plot.Tick{Value: ax.xs[i], Label: p.Label}
	}
	ax.log = sp.Numeric && lo > 0 && hi/lo >= 8
	if !sp.Numeric {
		ax.ticks, ax.title = compactTicks(ax.ticks, ax.title)
	}
	return ax
}

// compactTicks shortens labels of the form "a=1,b=2" that all name the
// same parameters in the same order, so that evenly spaced values do not
// print over one another: each label keeps the values of the parameters
// that vary, one per line, and the title names them in that order and
// states the parameters every value shares. Other labels are kept.
func compactTicks(ticks []plot.Tick, title string) ([]plot.Tick, string) {
	var keys []string
	vals := make([][]string, len(ticks))
	for i, t := range ticks {
		var ks []string
		for _, part := range strings.Split(t.Label, ",") {
			k, v, ok := strings.Cut(part, "=")
			if !ok {
				return ticks, title
			}
			ks, vals[i] = append(ks, k), append(vals[i], v)
		}
		if i > 0 && !slices.Equal(ks, keys) {
			return ticks, title
		}
		keys = ks
	}
	var varying, same []string
	var idx []int
	for j, k := range keys {
		all := true
		for i := range vals {
			all = all && vals[i][j] == vals[0][j]
		}
		if all && len(ticks) > 1 {
			same = append(same, k+"="+vals[0][j])
			continue
		}
		varying, idx = append(varying, k), append(idx, j)
	}
	out := slices.Clone(ticks)
	for i := range out {
		var lines []string
		for _, j := range idx {
			lines = append(lines, vals[i][j])
		}
		out[i].Label = strings.Join(lines, "\n")
	}
	title = strings.Join(varying, " / ")
	if len(same) > 0 {
		title += " (every value with " + strings.Join(same, ", ") + ")"
	}
	return out, title
}

func (sp *SweepPlot) newPanel(yLabel string, ax sweepAxis) *plot.Plot {
	ticks, logX := ax.ticks, ax.log
	p := plot.New()
	unifyFont(p)
	p.X.Label.Text = ax.title
	p.Y.Label.Text = yLabel
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = legendPadding
	p.Add(plotter.NewGrid())
	// Margins so the first and last points are not on the frame.
	lo, hi := ticks[0].Value, ticks[len(ticks)-1].Value
	for _, t := range ticks {
		lo, hi = min(lo, t.Value), max(hi, t.Value)
	}
	if logX {
		p.X.Min, p.X.Max = lo/1.25, hi*1.25
	} else {
		pad := max((hi-lo)*0.06, 0.5)
		p.X.Min, p.X.Max = lo-pad, hi+pad
	}
	return p
}

// panel draws one latency: its p50 (solid) and each statistic a budget
// judges, or the p99 (dashed) when no budget names another.
func (sp *SweepPlot) panel(name, yLabel string, ax sweepAxis) *plot.Plot {
	p := sp.newPanel(yLabel, ax)
	xs := ax.xs
	var all []plotter.XYs
	other := 0
	for _, stat := range sp.stats(name) {
		segs := sp.segments(xs, func(pt *SweepPlotPoint) float64 { return pt.stat(name, stat) })
		c, dashed := sweepOrange, true
		switch stat {
		case "p50":
			c, dashed = sweepBlue, false
		case "p99":
		default:
			c = budgetedColors[other%len(budgetedColors)]
			other++
		}
		ends := sp.addBars(p, xs, name+"."+stat, c)
		label := stat
		if len(ends) == 0 && sp.hasCI() {
			label += " (no 95 % interval: too few samples)"
		}
		sweepLine(p, label, segs, c, dashed)
		all = append(all, segs...)
		all = append(all, ends)
	}
	sweepHeadroom(p, append(all, sp.budgetXYs(name, xs)...)...)
	sp.markBudgets(p, name, xs)
	sp.markStraddling(p, name, xs)
	sp.markMissing(p, xs)
	sp.markRecommended(p, xs)
	return p
}

func (sp *SweepPlot) throughput(ax sweepAxis) *plot.Plot {
	p := sp.newPanel("output tokens/s", ax)
	xs := ax.xs
	segs := sp.segments(xs, func(pt *SweepPlotPoint) float64 { return pt.OutputTokensPerSec })
	sweepLine(p, "output tokens/s", segs, sweepGreen, false)
	bars := sp.addBars(p, xs, "throughput", sweepGreen)
	sweepHeadroom(p, append(append(segs, bars), sp.budgetXYs("throughput", xs)...)...)
	sp.markBudgets(p, "throughput", xs)
	sp.markVerdicts(p, xs)
	sp.markMissing(p, xs)
	sp.markRecommended(p, xs)
	return p
}

// budgetedColors draw the budgeted statistics other than p50 and p99.
var budgetedColors = []color.RGBA{{204, 121, 167, 255}, {86, 180, 233, 255}, {0, 0, 0, 255}}

// stats are the statistics a latency panel draws: the p50, then those
// its budgets judge in the order of the budgets' stats, or the p99 when
// no budget names a statistic other than the p50.
func (sp *SweepPlot) stats(panel string) []string {
	out := []string{"p50"}
	for _, l := range []string{"p90", "p95", "p99", "p99_9", "mean", "max"} {
		for _, b := range sp.Budgets {
			if b.Panel == panel && b.Stat == l && sp.has(panel, l) && !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	if len(out) == 1 {
		out = append(out, "p99")
	}
	return out
}

// has reports whether every point with figures has the statistic.
func (sp *SweepPlot) has(panel, stat string) bool {
	for i := range sp.Points {
		pt := &sp.Points[i]
		if !pt.Missing && math.IsNaN(pt.stat(panel, stat)) {
			return false
		}
	}
	return true
}

// stat is one statistic of the point on a latency panel, NaN when the
// point does not have it.
func (pt *SweepPlotPoint) stat(panel, stat string) float64 {
	switch {
	case panel == "ttft" && stat == "p50":
		return pt.TTFTP50
	case panel == "ttft" && stat == "p99":
		return pt.TTFTP99
	case panel == "itl" && stat == "p50":
		return pt.ITLP50
	case panel == "itl" && stat == "p99":
		return pt.ITLP99
	}
	if v, ok := pt.Stats[panel+"."+stat]; ok {
		return v
	}
	return math.NaN()
}

// budgetXYs are the budget lines of a panel as points, so the y axis
// leaves room for them.
func (sp *SweepPlot) budgetXYs(panel string, xs []float64) []plotter.XYs {
	var out []plotter.XYs
	for _, b := range sp.Budgets {
		if b.Panel == panel {
			out = append(out, plotter.XYs{{X: xs[0], Y: b.Limit}})
		}
	}
	return out
}

// budgetDashes tell a panel's budget lines apart.
var budgetDashes = [][]vg.Length{{vg.Points(8), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}

// markBudgets draws each budget of the panel as a red horizontal line
// across the plot.
func (sp *SweepPlot) markBudgets(p *plot.Plot, panel string, xs []float64) {
	i := 0
	for _, b := range sp.Budgets {
		if b.Panel != panel {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: b.Limit}, {X: p.X.Max, Y: b.Limit}})
		if err != nil {
			continue
		}
		l.Color = sweepRed
		l.Width = vg.Points(1.4)
		l.Dashes = budgetDashes[i%len(budgetDashes)]
		i++
		p.Add(l)
		p.Legend.Add("budget: "+b.Name, l)
	}
}

// markVerdicts rings each value that met the budgets in green, crosses
// each that missed them in red and squares each inconclusive one in amber,
// at its throughput.
func (sp *SweepPlot) markVerdicts(p *plot.Plot, xs []float64) {
	var pass, fail, undecided plotter.XYs
	for i := range sp.Points {
		pt := &sp.Points[i]
		if pt.Pass == nil || pt.Missing {
			continue
		}
		xy := plotter.XY{X: xs[i], Y: pt.OutputTokensPerSec}
		switch {
		case *pt.Pass:
			pass = append(pass, xy)
		case pt.Verdict == "inconclusive":
			undecided = append(undecided, xy)
		default:
			fail = append(fail, xy)
		}
	}
	addVerdictMarks(p, pass, fail, undecided)
}

// addVerdictMarks rings the points whose budgets were met, crosses those
// that missed them and squares those whose verdict was inconclusive, with
// a legend entry for each kind present.
func addVerdictMarks(p *plot.Plot, met, missed, undecided plotter.XYs) {
	for _, set := range []struct {
		pts   plotter.XYs
		shape draw.GlyphDrawer
		c     color.Color
		name  string
	}{{met, draw.RingGlyph{}, sweepGreen, "budgets met"}, {missed, draw.CrossGlyph{}, sweepRed, "budgets missed"},
		{undecided, boldSquare{}, sweepAmber, "budgets inconclusive"}} {
		if len(set.pts) == 0 {
			continue
		}
		s, err := plotter.NewScatter(set.pts)
		if err != nil {
			continue
		}
		s.Shape, s.Color, s.Radius = set.shape, set.c, vg.Points(7)
		p.Add(s)
		// The legend's mark smaller than the plot's, so that it keeps
		// within its entry's row.
		thumb := *s
		thumb.Radius = vg.Points(4.5)
		p.Legend.Add(set.name, &thumb)
	}
}

// segments splits the series at missing points, so a failed value shows
// as a gap rather than as a line drawn across it.
func (sp *SweepPlot) segments(xs []float64, f func(*SweepPlotPoint) float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i := range sp.Points {
		pt := &sp.Points[i]
		if pt.Missing {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, plotter.XY{X: xs[i], Y: f(pt)})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// markMissing draws a cross on the x axis at every value without figures.
func (sp *SweepPlot) markMissing(p *plot.Plot, xs []float64) {
	var pts plotter.XYs
	for i := range sp.Points {
		if sp.Points[i].Missing {
			pts = append(pts, plotter.XY{X: xs[i], Y: 0})
		}
	}
	if len(pts) == 0 {
		return
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return
	}
	s.Shape = draw.CrossGlyph{}
	s.Color = sweepRed
	s.Radius = vg.Points(6)
	p.Add(s)
	p.Legend.Add("failed: no figures", s)
}

// markRecommended draws a dotted vertical line at the recommended value.
func (sp *SweepPlot) markRecommended(p *plot.Plot, xs []float64) {
	i := sp.Recommended
	if i < 0 || i >= len(xs) {
		return
	}
	l, err := plotter.NewLine(plotter.XYs{{X: xs[i], Y: p.Y.Min}, {X: xs[i], Y: p.Y.Max}})
	if err != nil {
		return
	}
	l.Color = sweepGrey
	l.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
	p.Add(l)
	name := sp.RecommendedLabel
	if name == "" {
		name = "recommended"
	}
	p.Legend.Add(name+": "+sp.Points[i].Label, l)
}

// sweepLine draws the segments of one series with point markers and one
// legend entry.
func sweepLine(p *plot.Plot, label string, segs []plotter.XYs, c color.Color, dashed bool) {
	for i, pts := range segs {
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			continue // only NaN or Inf values, which summaries do not hold
		}
		l.Color, s.Color = c, c
		l.Width = vg.Points(1.6)
		s.Radius = vg.Points(3)
		s.Shape = draw.CircleGlyph{}
		if dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l, s)
		if i == 0 {
			p.Legend.Add(label, l, s)
		}
	}
}

// sweepHeadroom starts the y axis at 0 and leaves room above the data for
// the legend, which has no background.
func sweepHeadroom(p *plot.Plot, sets ...plotter.XYs) {
	hi := 0.0
	for _, set := range sets {
		for _, xy := range set {
			if !math.IsNaN(xy.Y) && !math.IsInf(xy.Y, 0) {
				hi = max(hi, xy.Y)
			}
		}
	}
	if hi <= 0 {
		hi = 1
	}
	p.Y.Min, p.Y.Max = 0, hi*1.45
	p.Y.Tick.Marker = sweepTicks{}
}

// sweepTicks puts about five round major ticks on an axis, labelled
// without needless decimals.
type sweepTicks struct{}

// Ticks implements plot.Ticker.
func (sweepTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		v := math.Round(i*step*1e9) / 1e9
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		ticks = append(ticks, plot.Tick{Value: v + step/2}) // minor
	}
	return ticks
}

// SweepX parses values as the numeric x positions of a sweep plot; ok is
// false when any value is not a finite number.
func SweepX(values []string) (xs []float64, ok bool) {
	xs = make([]float64, len(values))
	for i, v := range values {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		xs[i] = x
	}
	return xs, true
}

// addBars draws the 95 % interval of one series (key as in
// SweepPlotPoint.CI) at every value that has one, in a darker shade of the
// series' colour, and returns the intervals' ends so the axis makes room
// for them.
func (sp *SweepPlot) addBars(p *plot.Plot, xs []float64, key string, c color.RGBA) plotter.XYs {
	e := &sweepBars{c: barColour(c)}
	var ends plotter.XYs
	for i := range sp.Points {
		pt := &sp.Points[i]
		iv, ok := pt.CI[key]
		if pt.Missing || !ok {
			continue
		}
		e.xs, e.lo, e.hi = append(e.xs, xs[i]), append(e.lo, iv[0]), append(e.hi, iv[1])
		ends = append(ends, plotter.XY{X: xs[i], Y: iv[1]})
	}
	if len(e.xs) > 0 {
		p.Add(e)
	}
	return ends
}

// barColour is the colour of a series' error bars: the series' own, a
// third darker, so a bar reads as its line's and stands out from it.
func barColour(c color.RGBA) color.RGBA {
	return color.RGBA{R: uint8(float64(c.R) * 0.66), G: uint8(float64(c.G) * 0.66), B: uint8(float64(c.B) * 0.66), A: 255}
}

// sweepBars are vertical interval bars, each one path (a capped stem), at
// the points' x positions.
type sweepBars struct {
	xs, lo, hi []float64
	c          color.Color
}

// Plot implements plot.Plotter.
func (e *sweepBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	style := draw.LineStyle{Color: e.c, Width: vg.Points(1.1)}
	capW := vg.Points(4)
	for i, x := range e.xs {
		px, y0, y1 := trX(x), trY(e.lo[i]), trY(e.hi[i])
		var path vg.Path
		path.Move(vg.Point{X: px - capW, Y: y0})
		path.Line(vg.Point{X: px + capW, Y: y0})
		path.Move(vg.Point{X: px, Y: y0})
		path.Line(vg.Point{X: px, Y: y1})
		path.Move(vg.Point{X: px - capW, Y: y1})
		path.Line(vg.Point{X: px + capW, Y: y1})
		c.SetLineStyle(style)
		c.Stroke(path)
	}
}

// markStraddling squares in amber each value whose interval of a
// budgeted statistic straddles that budget's line on a latency panel:
// the data cannot tell on which side of the limit the figure lies.
func (sp *SweepPlot) markStraddling(p *plot.Plot, panel string, xs []float64) {
	var pts plotter.XYs
	for _, b := range sp.Budgets {
		if b.Panel != panel {
			continue
		}
		stat := b.Stat
		if stat == "" {
			stat = "p99"
		}
		for i := range sp.Points {
			pt := &sp.Points[i]
			iv, ok := pt.CI[panel+"."+stat]
			if !pt.Missing && ok && iv[0] <= b.Limit && b.Limit <= iv[1] {
				pts = append(pts, plotter.XY{X: xs[i], Y: pt.stat(panel, stat)})
			}
		}
	}
	if len(pts) == 0 {
		return
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return
	}
	s.Shape, s.Color, s.Radius = boldSquare{}, sweepAmber, vg.Points(7)
	p.Add(s)
	thumb := *s
	thumb.Radius = vg.Points(4.5)
	p.Legend.Add("interval straddles the budget", &thumb)
}

// hasCI reports whether any point has an interval to draw.
func (sp *SweepPlot) hasCI() bool {
	for i := range sp.Points {
		if len(sp.Points[i].CI) > 0 && !sp.Points[i].Missing {
			return true
		}
	}
	return false
}

// boldSquare is an open square drawn with a thicker line than
// draw.SquareGlyph's, so an amber mark reads on a white plot.
type boldSquare struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (boldSquare) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.6)})
	r := sty.Radius * 0.8
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Close()
	c.Stroke(p)
}

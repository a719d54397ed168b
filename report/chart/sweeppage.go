package chart

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/servebench/servebench/report"
)

// SweepHTMLName is the file name of a sweep's page.
const SweepHTMLName = "sweep.html"

// seriesColors tell the series of the load and Pareto plots apart
// (Okabe–Ito, without the colours the budgets and verdicts use).
var seriesColors = []color.Color{
	sweepBlue, sweepOrange, color.RGBA{204, 121, 167, 255}, color.RGBA{86, 180, 233, 255},
	color.RGBA{230, 159, 0, 255}, color.RGBA{0, 0, 0, 255},
}

// LoadPoint is one run (or one value's mean) on the load curves: its
// load and figures; latencies in milliseconds.
type LoadPoint struct {
	Label              string
	Load               float64 // offered load, or requests/s served
	TTFTP50, TTFTP99   float64
	ITLP50, ITLP99     float64
	TPOTP50            float64
	OutputTokensPerSec float64
	Pass               *bool // met the budgets (nil: no verdict)
	// Verdict "inconclusive" marks the point as such rather than missed.
	Verdict string
	// ParetoX is the point's x in a Pareto plot with another axis than
	// total throughput (ParetoPlot.XLabel): tokens/s per GPU, tokens per
	// joule, $ per 1M tokens; 0 when unknown, and the point is not drawn.
	ParetoX float64
}

// LoadSeries is one curve: the points of one combination of the other
// parameters, in load order.
type LoadSeries struct {
	Name   string // "" when there is one series
	Points []LoadPoint
}

// LoadPlot draws latency and throughput against load: TTFT and ITL (p50
// solid, p99 dashed) and output tokens/s, one colour per series.
type LoadPlot struct {
	Title  string
	XLabel string // "load.stages[0].rate (requests/s)" or "requests/s served"
	Series []LoadSeries
}

// Render draws the plot as PNG and SVG.
func (lp *LoadPlot) Render() (pngData, svgData []byte, err error) {
	if countPoints(lp.Series) == 0 {
		return nil, nil, fmt.Errorf("load plot: no points")
	}
	panels := []*plot.Plot{
		lp.panel("TTFT (ms)", func(p LoadPoint) [2]float64 { return [2]float64{p.TTFTP50, p.TTFTP99} }),
		lp.panel("ITL (ms)", func(p LoadPoint) [2]float64 { return [2]float64{p.ITLP50, p.ITLP99} }),
		lp.panel("output tokens/s", func(p LoadPoint) [2]float64 { return [2]float64{p.OutputTokensPerSec, math.NaN()} }),
	}
	panels[0].Title.Text = lp.Title
	panels[0].Title.TextStyle.Font.Size = vg.Points(13)
	return renderColumn(panels, 10*vg.Inch, 10*vg.Inch, "load plot")
}

func (lp *LoadPlot) panel(yLabel string, f func(LoadPoint) [2]float64) *plot.Plot {
	p := plot.New()
	unifyFont(p)
	p.X.Label.Text = lp.XLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = legendPadding
	p.Add(plotter.NewGrid())
	var all []plotter.XYs
	for si, s := range lp.Series {
		c := seriesColors[si%len(seriesColors)]
		for k, dashed := range []bool{false, true} {
			var pts plotter.XYs
			for _, pt := range s.Points {
				if y := f(pt)[k]; !math.IsNaN(y) {
					pts = append(pts, plotter.XY{X: pt.Load, Y: y})
				}
			}
			if len(pts) == 0 {
				continue
			}
			all = append(all, pts)
			name := []string{"p50", "p99"}[k]
			if math.IsNaN(f(s.Points[0])[1]) {
				name = yLabel
			}
			if s.Name != "" {
				name = s.Name + " " + name
			}
			sweepLine(p, name, []plotter.XYs{pts}, c, dashed)
		}
	}
	sweepHeadroom(p, all...)
	p.X.Min, p.X.Max = padRange(all)
	p.X.Min = max(p.X.Min, 0) // a load is never negative
	p.X.Tick.Marker = sweepTicks{}
	return p
}

// ParetoPlot is the trade-off between one user's speed and the server's:
// output tokens/s per user (1000 / TPOT p50) against total output
// tokens/s, one point per value. The values no other beats on both are
// the frontier, joined by a line.
type ParetoPlot struct {
	Title  string
	Series []LoadSeries
	// XLabel names the x axis when it is not total output throughput:
	// the points' ParetoX is drawn instead. XLowerIsBetter says a
	// smaller x is better ($ per 1M tokens), for the frontier.
	XLabel         string
	XLowerIsBetter bool

	omitted int // labels the last Render left out (see LabelsNote)
}

// x is a point's x in pp.
func (pp *ParetoPlot) x(p LoadPoint) float64 {
	if pp.XLabel != "" {
		return p.ParetoX
	}
	return p.OutputTokensPerSec
}

// Frontier returns the indexes of pts that no other point beats on both
// total and per-user throughput, in order of total throughput.
func Frontier(pts []LoadPoint) []int {
	return FrontierBy(pts, func(p LoadPoint) float64 { return p.OutputTokensPerSec }, false)
}

// FrontierBy returns the indexes of pts that no other point beats on both
// x (larger, or smaller when lowerBetter) and per-user throughput, in
// order of x; a point without x (0) or per-user speed is left out.
func FrontierBy(pts []LoadPoint, x func(LoadPoint) float64, lowerBetter bool) []int {
	key := func(p LoadPoint) float64 {
		if lowerBetter {
			return -x(p)
		}
		return x(p)
	}
	var out []int
	for i, a := range pts {
		ua := perUser(a)
		if ua <= 0 || x(a) <= 0 {
			continue
		}
		dominated := false
		for j, b := range pts {
			ub := perUser(b)
			if i != j && ub > 0 && x(b) > 0 && key(b) >= key(a) && ub >= ua && (key(b) > key(a) || ub > ua) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b int) int { return cmpF(x(pts[a]), x(pts[b])) })
	return out
}

// Frontier returns the indexes of the points of s on pp's frontier.
func (pp *ParetoPlot) Frontier(s LoadSeries) []int {
	return FrontierBy(s.Points, pp.x, pp.XLowerIsBetter)
}

func perUser(p LoadPoint) float64 {
	if p.TPOTP50 <= 0 {
		return 0
	}
	return 1000 / p.TPOTP50
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// paretoFlat is the spread of total throughput within which the values
// are taken to serve the same load: the Pareto plot then has no
// trade-off to show.
const paretoFlat = 0.02

// Flat says, in a sentence, why the plot would show nothing: every value
// served the same total output (within paretoFlat), so the points stand
// in one column, their labels on one another, and there is no trade-off
// between total and per-user speed. "" when there is something to see.
func (pp *ParetoPlot) Flat() string {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for _, s := range pp.Series {
		for _, pt := range s.Points {
			if x := pp.x(pt); perUser(pt) > 0 && x > 0 {
				lo, hi, n = min(lo, x), max(hi, x), n+1
			}
		}
	}
	if n < 2 || hi > lo*(1+paretoFlat) {
		return ""
	}
	if pp.XLabel != "" {
		return fmt.Sprintf("No Pareto plot: every value had the same %s (%s–%s, within %.0f %%), so there is no trade-off against per-user speed to draw; "+
			"the values table compares their per-user speed.", pp.XLabel, report.FormatNumber(lo), report.FormatNumber(hi), 100*paretoFlat)
	}
	return fmt.Sprintf("No Pareto plot: every value served the same total output (%s–%s tok/s, within %.0f %%), so there is no trade-off "+
		"between total and per-user speed to draw; the values table compares their per-user speed.",
		report.FormatNumber(lo), report.FormatNumber(hi), 100*paretoFlat)
}

// LabelsNote says how many point labels the last Render left out because
// they had no free place beside their point; "" when none. (Render keeps
// the count, so a ParetoPlot is rendered by one goroutine at a time.)
func (pp *ParetoPlot) LabelsNote() string {
	if pp.omitted == 0 {
		return ""
	}
	they := "they"
	if pp.omitted == 1 {
		they = "it"
	}
	return fmt.Sprintf("%s left out where %s would have overlapped another label or point; the values table names every value.",
		report.FormatCount(pp.omitted, "label was", "labels were"), they)
}

// Render draws the plot as PNG and SVG.
func (pp *ParetoPlot) Render() (pngData, svgData []byte, err error) {
	if countPoints(pp.Series) == 0 {
		return nil, nil, fmt.Errorf("pareto plot: no points")
	}
	p := plot.New()
	unifyFont(p)
	p.Title.Text = pp.Title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "total output tokens/s"
	if pp.XLabel != "" {
		p.X.Label.Text = pp.XLabel
	}
	p.Y.Label.Text = "output tokens/s per user (1000 / TPOT p50)"
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Legend.Padding = legendPadding
	p.Add(plotter.NewGrid())
	labels := &pointLabels{style: draw.TextStyle{Color: color.Black, Font: font.From(plotFont(), 8), Handler: p.TextHandler},
		radius: vg.Points(3.5), omitted: &pp.omitted}
	var all []plotter.XYs
	var met, missed, undecided plotter.XYs
	for si, s := range pp.Series {
		pts, names, m, x, u := pp.points(s)
		if len(pts) == 0 {
			continue
		}
		met, missed, undecided = append(met, m...), append(missed, x...), append(undecided, u...)
		all = append(all, pts)
		labels.legendRows += pp.addSeries(p, s, pts, seriesColors[si%len(seriesColors)])
		labels.xys, labels.labels = append(labels.xys, pts...), append(labels.labels, names...)
	}
	addVerdictMarks(p, met, missed, undecided)
	for _, set := range []plotter.XYs{met, missed, undecided} {
		if len(set) > 0 {
			labels.legendRows++
		}
	}
	if len(met)+len(missed)+len(undecided) > 0 {
		labels.radius = vg.Points(7) // the verdict rings and crosses
	}
	labels.legend = draw.TextStyle{Font: p.Legend.TextStyle.Font, Handler: p.TextHandler}
	p.Add(labels)
	sweepHeadroom(p, all...)
	p.X.Min, p.X.Max = padRange(all)
	p.X.Min = max(p.X.Min, 0)
	p.X.Tick.Marker = sweepTicks{}
	return renderColumn([]*plot.Plot{p}, 10*vg.Inch, 6.5*vg.Inch, "pareto plot")
}

// points are a series' points with an x and a per-user speed, their
// labels, and those that met, missed and could not decide the budgets.
func (pp *ParetoPlot) points(s LoadSeries) (pts plotter.XYs, labels []string, met, missed, undecided plotter.XYs) {
	for _, pt := range s.Points {
		u := perUser(pt)
		if u <= 0 || pp.x(pt) <= 0 {
			continue
		}
		xy := plotter.XY{X: pp.x(pt), Y: u}
		pts, labels = append(pts, xy), append(labels, pt.Label)
		switch {
		case pt.Pass == nil:
		case *pt.Pass:
			met = append(met, xy)
		case pt.Verdict == "inconclusive":
			undecided = append(undecided, xy)
		default:
			missed = append(missed, xy)
		}
	}
	return pts, labels, met, missed, undecided
}

// addSeries draws a series' points and its Pareto frontier, and returns
// how many legend entries it added.
func (pp *ParetoPlot) addSeries(p *plot.Plot, s LoadSeries, pts plotter.XYs, c color.Color) int {
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return 0
	}
	sc.Color, sc.Shape, sc.Radius = c, draw.CircleGlyph{}, vg.Points(3.5)
	p.Add(sc)
	name := "values"
	if s.Name != "" {
		name = s.Name
	}
	p.Legend.Add(name, sc)
	var front plotter.XYs
	for _, i := range pp.Frontier(s) {
		front = append(front, plotter.XY{X: pp.x(s.Points[i]), Y: perUser(s.Points[i])})
	}
	if len(front) > 1 {
		if l, err := plotter.NewLine(front); err == nil {
			l.Color, l.Width = c, vg.Points(1.6)
			p.Add(l)
			p.Legend.Add(name+": Pareto frontier", l)
			return 2
		}
	}
	return 1
}

func countPoints(ss []LoadSeries) int {
	n := 0
	for _, s := range ss {
		n += len(s.Points)
	}
	return n
}

// padRange is the x range of the points with a margin on each side.
func padRange(sets []plotter.XYs) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, set := range sets {
		for _, xy := range set {
			lo, hi = min(lo, xy.X), max(hi, xy.X)
		}
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	// At least a tenth of the values' size wide, so that differences of
	// a fraction of a percent do not fill the plot.
	width := max(hi-lo, 0.1*max(math.Abs(lo), math.Abs(hi)))
	if width == 0 {
		width = 1
	}
	mid := (lo + hi) / 2
	pad := width * 0.08
	return mid - width/2 - pad, mid + width/2 + pad
}

// renderColumn draws panels one above the other.
func renderColumn(panels []*plot.Plot, w, h vg.Length, what string) ([]byte, []byte, error) {
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
	png, svg, err := encode(w, h, paint)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return png, svg, nil
}

// SweepPage is what sweep.html shows: a sweep or a search, its answer in
// a sentence, the table, the budgets and the three plots.
type SweepPage struct {
	Scenario   string
	Kind       string // "sweep" or "search"
	Parameters []string
	Started    time.Time
	Runs       int
	// Answer is the recommendation or the capacity, in a sentence;
	// Answered is false when there is none (Answer says why).
	Answer   string
	Answered bool
	// Searches are the capacity answers, one per combination.
	Searches []SweepPageSearch
	Budgets  []string // the scenario's budgets, "overall.ttft_ms.p99 ≤ 200"
	Columns  []string // of Rows, after the value
	Rows     []SweepPageRow
	// CINote says, under the table, what the rows' intervals are and how
	// they were formed; "" when no row has one.
	CINote   string
	Failures []string // runs that failed, with why
	Notes    []string
	// Omitted says of each plot left out why, where the plots are.
	Omitted []string

	Sweep  *SweepPlot
	Load   *LoadPlot
	Pareto *ParetoPlot
}

// SweepPageSearch is one search's answer.
type SweepPageSearch struct {
	Label      string // the combination, "" for the only one
	Answer     string // "17 requests/s", or "–"
	Bracket    string // "[17, 19)"
	Confidence string
	Reason     string
}

// SweepPageRow is one value of the table.
type SweepPageRow struct {
	Label string
	Cells []string
	// CIs are the cells' 95 % intervals, "lo–hi", index for index; ""
	// (or absent) for a cell without one.
	CIs  []string
	Pass *bool // budgets met (nil: no verdict)
	// Verdict "inconclusive" shows as such rather than as missed.
	Verdict string
	Marked  bool   // the recommended value, or the capacity
	Note    string // "clear", "majority 2 of 3", "over-saturated", …
}

// WriteSweepHTML writes the page: self-contained, plots inline as SVG,
// nothing loaded from anywhere.
func WriteSweepHTML(w io.Writer, p *SweepPage) error {
	data := sweepHTMLData{P: p, Omitted: slices.Clone(p.Omitted)}
	for _, f := range []struct {
		name, title string
		r           interface {
			Render() ([]byte, []byte, error)
		}
		ok bool
	}{
		{"sweep", "Latency and throughput against the value, with the budgets", p.Sweep, p.Sweep != nil},
		{"load", "Latency and throughput against load", p.Load, p.Load != nil && countPoints(p.Load.Series) > 0},
		{"pareto", "Per-user speed against total throughput", p.Pareto, p.Pareto != nil && countPoints(p.Pareto.Series) > 0},
	} {
		if !f.ok {
			continue
		}
		if f.name == "pareto" {
			if why := p.Pareto.Flat(); why != "" {
				data.Omitted = append(data.Omitted, why)
				continue
			}
		}
		_, svg, err := f.r.Render()
		if err != nil {
			return fmt.Errorf("write sweep page: %w", err)
		}
		inline, err := inlineSVG(svg, f.title)
		if err != nil {
			return fmt.Errorf("write sweep page: plot %s: %w", f.name, err)
		}
		fig := htmlFigure{Name: f.name, Title: f.title, SVG: inline}
		if f.name == "pareto" {
			if p.Pareto.XLabel != "" {
				fig.Title = "Per-user speed against " + p.Pareto.XLabel
			}
			if note := p.Pareto.LabelsNote(); note != "" {
				fig.Notes = append(fig.Notes, note)
			}
		}
		data.Figures = append(data.Figures, fig)
	}
	var b bytes.Buffer
	funcs := template.FuncMap{"deref": func(b *bool) bool { return b != nil && *b }, "breakable": breakable,
		"ci": func(r SweepPageRow, i int) string {
			if i < len(r.CIs) {
				return r.CIs[i]
			}
			return ""
		}}
	if err := template.Must(template.New("sweep").Funcs(funcs).Parse(sweepHTMLSource)).Execute(&b, data); err != nil {
		return fmt.Errorf("write sweep page: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write sweep page: %w", err)
	}
	return nil
}

// breakable escapes a value's label ("a=1,b=2") and lets it wrap after
// each comma, so a label of several parameters fits its column.
func breakable(label string) template.HTML {
	parts := strings.Split(label, ",")
	for i, p := range parts {
		parts[i] = template.HTMLEscapeString(p)
	}
	return template.HTML(strings.Join(parts, ",<wbr>")) // escaped above
}

type sweepHTMLData struct {
	P       *SweepPage
	Figures []htmlFigure
	Omitted []string // plots left out, and why
}

const sweepHTMLSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>servebench {{.P.Kind}} · {{.P.Scenario}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1a1a1a; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
.meta { color: #555; margin-top: 0; }
.answer { font-size: 1.1rem; background: #f3f8f5; border-left: 4px solid #00734d; padding: 0.6rem 0.9rem; }
.answer.none { background: #fdecea; border-left-color: #b3261e; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.5rem 0; }
th, td { padding: 0.25rem 0.45rem; border-bottom: 1px solid #e4e4e4; text-align: right; vertical-align: top; }
td { white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; vertical-align: bottom; }
tr.marked td { font-weight: 600; background: #eef6f1; }
td.pass { color: #00734d; }
td.fail { color: #b3261e; font-weight: 600; }
td.inconclusive { color: #8a5a00; font-weight: 600; }
.ci { color: #666; font-size: 0.8rem; }
td.note, th.note { text-align: left; color: #555; white-space: normal; min-width: 9rem; font-size: 0.85rem; }
td.value { white-space: normal; overflow-wrap: anywhere; min-width: 9rem; max-width: 16rem; }
table { max-width: 100%; }
#values { font-size: 0.92rem; }
figure { margin: 1.5rem 0; }
figcaption { color: #555; font-size: 0.95rem; }
svg.plot { width: 100%; height: auto; display: block; }
.note { color: #555; font-size: 0.9rem; }
</style>
</head>
<body>
<h1>servebench {{.P.Kind}}: {{.P.Scenario}}</h1>
<p class="meta">{{.P.Kind}} over {{range $i, $p := .P.Parameters}}{{if $i}}, {{end}}{{$p}}{{end}} · {{.P.Runs}} runs · started {{.P.Started.UTC.Format "2006-01-02 15:04:05 UTC"}}</p>

<p id="answer" class="answer{{if not .P.Answered}} none{{end}}">{{.P.Answer}}</p>
{{if .P.Searches}}
<h2>Capacity</h2>
<table id="searches">
<thead><tr><th>search</th><th>capacity</th><th>bracket</th><th>confidence</th><th class="note">how it was decided</th></tr></thead>
<tbody>
{{range .P.Searches}}<tr><td class="value">{{if .Label}}{{breakable .Label}}{{else}}–{{end}}</td><td>{{.Answer}}</td><td>{{.Bracket}}</td><td>{{.Confidence}}</td><td class="note">{{.Reason}}</td></tr>
{{end}}</tbody>
</table>
{{end}}
<h2>Values</h2>
<table id="values">
<thead><tr><th>value</th>{{range .P.Columns}}<th>{{.}}</th>{{end}}<th>budgets</th><th class="note"></th></tr></thead>
<tbody>
{{range .P.Rows}}<tr{{if .Marked}} class="marked"{{end}}><td class="value">{{breakable .Label}}</td>{{$row := .}}{{range $i, $c := .Cells}}<td>{{$c}}{{with ci $row $i}}<br><span class="ci">{{.}}</span>{{end}}</td>{{end}}{{if eq .Verdict "inconclusive"}}<td class="inconclusive">inconclusive</td>{{else if .Pass}}{{if deref .Pass}}<td class="pass">met</td>{{else}}<td class="fail">missed</td>{{end}}{{else}}<td>–</td>{{end}}<td class="note">{{.Note}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Latencies in milliseconds, means over each value's runs; per user = 1000 / TPOT p50.{{if .P.CINote}} {{.P.CINote}}{{end}}</p>
{{if .P.Budgets}}<h2>Budgets</h2>
<ul id="budgets">{{range .P.Budgets}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2>Plots</h2>
{{range .Figures}}<figure id="plot-{{.Name}}">
{{.SVG}}
<figcaption>{{.Title}}{{range .Notes}} {{.}}{{end}}</figcaption>
</figure>
{{end}}{{range .Omitted}}<p class="note omitted">{{.}}</p>
{{end}}
{{if .P.Failures}}<h2>Failed runs</h2>
<ul id="failures">{{range .P.Failures}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .P.Notes}}<h2>Notes</h2>
<ul>{{range .P.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body>
</html>
`

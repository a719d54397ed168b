package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/results"
)

// HTMLName is the file name of the HTML report WriteFiles writes.
const HTMLName = "report.html"

// WriteHTML writes the HTML report: one self-contained page (plots inline
// as SVG, one inline script for the readout and zoom, no script, style
// sheet, font or image loaded from anywhere) with the conclusion, the
// workload and environment box, the summary, throughput and latency
// tables, the budget verdict, the correlation findings in sentences, the
// plots, the error table, the warnings and the resolved scenario. scenario
// is the resolved scenario JSON from the results header (may be nil).
func WriteHTML(w io.Writer, s *report.Summary, figs []Figure, scenario json.RawMessage) error {
	data := htmlData{S: s, Scenario: prettyJSON(scenario), About: s.About(), Script: template.JS(readoutScript)}
	rows := append([]report.Stage(nil), s.Stages...)
	if len(s.Stages) != 1 {
		rows = append(rows, s.Overall)
	}
	for _, st := range rows {
		data.Rows = append(data.Rows, htmlRow{Stage: st, Overall: st.Index < 0})
	}
	for _, st := range rows {
		for _, class := range slices.Sorted(maps.Keys(st.Errors)) {
			data.Errors = append(data.Errors, htmlError{Stage: st.Name, Class: class, Count: st.Errors[class],
				Messages: st.ErrorMessages[class]})
		}
	}
	if c := s.Correlation; c != nil {
		data.Findings = c.Findings
		if c.Conclusion != "" && len(c.Findings) > 0 && c.Findings[0] == c.Conclusion {
			data.Findings = c.Findings[1:] // the conclusion opens the page
		}
		data.Corr = c
	}
	data.Spec = specRows(data.Rows)
	for _, m := range report.LatencyMetrics {
		g := htmlLatency{Label: m.Label, Metric: m.Metric}
		for _, st := range data.Rows {
			g.Rows = append(g.Rows, htmlLatencyRow{Stage: st.Name, Overall: st.Overall, Dist: *st.Dist(m.Metric)})
		}
		data.Latency = append(data.Latency, g)
	}
	for _, f := range figs {
		svg, err := inlineSVG(f.SVG, f.Title)
		if err != nil {
			return fmt.Errorf("write HTML report: plot %s: %w", f.Name, err)
		}
		panels, err := json.Marshal(f.Panels)
		if err != nil {
			return fmt.Errorf("write HTML report: plot %s: %w", f.Name, err)
		}
		data.Figures = append(data.Figures, htmlFigure{Name: f.Name, Title: f.Title, Notes: f.Notes, SVG: svg, Panels: string(panels)})
	}
	var b bytes.Buffer
	if err := htmlTemplate().Execute(&b, data); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}

// ErrNothingToPlot is WriteFiles' refusal of a summary in which no
// request succeeded: plots of nothing would look like findings.
var ErrNothingToPlot = errors.New("no request succeeded: nothing to plot")

// WriteFiles renders the plots of everything added to a (PNG and SVG) and
// the HTML report of s (a's summary, with its verdict if judged) into dir,
// and returns the paths written. The output is a pure function of the
// records added and the verdict. A summary without a successful request
// writes nothing and returns ErrNothingToPlot.
func WriteFiles(dir string, a *report.Aggregate, s *report.Summary) ([]string, error) {
	if s.Overall.Requests.OK == 0 {
		return nil, ErrNothingToPlot
	}
	figs, err := Figures(a, s)
	if err != nil {
		return nil, err
	}
	paths, err := WritePlots(dir, figs)
	if err != nil {
		return paths, err
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, s, figs, a.Scenario()); err != nil {
		return paths, err
	}
	p := filepath.Join(dir, HTMLName)
	if err := atomicfile.WriteBytes(p, b.Bytes()); err != nil {
		return paths, fmt.Errorf("write HTML report: %w", err)
	}
	return append(paths, p), nil
}

// Renderer draws a run's pictures with WriteFiles: what run.Options.Render
// and run.Merge take.
type Renderer struct{}

// Render writes the plots and report.html of a run into dir.
func (Renderer) Render(dir string, a *report.Aggregate, s *report.Summary) error {
	_, err := WriteFiles(dir, a, s)
	return err
}

// Files names every file Render may write.
func (Renderer) Files() []string {
	out := []string{HTMLName}
	for _, name := range PlotNames() {
		out = append(out, name+".png", name+".svg")
	}
	return out
}

// inlineSVG strips the XML prolog and comment gonum writes before <svg, so
// the document can sit inside HTML, makes it scale with the page, and
// gives it title as its <title> (the browser's tooltip, and its name for a
// screen reader).
func inlineSVG(doc []byte, title string) (template.HTML, error) {
	i := bytes.Index(doc, []byte("<svg"))
	if i < 0 {
		return "", fmt.Errorf("no <svg> element")
	}
	svg := string(doc[i:])
	svg = strings.Replace(svg, "<svg ", `<svg class="plot" role="img" `, 1)
	if j := strings.Index(svg, ">"); j >= 0 {
		svg = svg[:j+1] + "\n<title>" + template.HTMLEscapeString(title) + "</title>" + svg[j+1:]
	}
	// The SVG comes from our own renderer, not from user input.
	return template.HTML(svg), nil
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

type htmlData struct {
	Script   template.JS
	S        *report.Summary
	About    []report.Fact
	Rows     []htmlRow
	Latency  []htmlLatency
	Errors   []htmlError
	Findings []string
	Corr     *correlate.Correlation
	Figures  []htmlFigure
	Scenario string
	Spec     []htmlSpec
}

// htmlSpec is one row of the speculative-decoding table: a stage's
// figures from one source.
type htmlSpec struct {
	Stage                              string
	Overall                            bool
	Source, Rate, Length, Accepted, Of string
}

type htmlRow struct {
	report.Stage
	Overall bool
}

// htmlLatency is one metric's distribution in every stage.
type htmlLatency struct {
	Label  string
	Metric string // its name in results.Metrics
	Rows   []htmlLatencyRow
}

type htmlLatencyRow struct {
	Stage   string
	Overall bool
	report.Dist
}

type htmlError struct {
	Stage    string
	Class    string
	Count    int64
	Messages []string // the first distinct messages
}

type htmlFigure struct {
	Name, Title string
	Notes       []string
	SVG         template.HTML
	Panels      string // JSON of the figure's Panels, for the readout script
}

func htmlTemplate() *template.Template {
	funcs := template.FuncMap{
		"ms": func(d report.Dist, stat string) string {
			if d.Count == 0 {
				return "–"
			}
			v := d.Std
			if stat != "std" {
				v, _ = d.Stat(stat)
			}
			return report.FormatLatency(v, d.Count)
		},
		"f1":     func(v float64) string { return fmt.Sprintf("%.1f", v) },
		"perReq": func(v, n int64) string { return fmt.Sprintf("%.0f", float64(v)/float64(max(n, 1))) },
		"share": func(part, whole int64) string {
			if part == 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f %%", 100*float64(part)/float64(max(whole, 1)))
		},
		"f2":     func(v float64) string { return fmt.Sprintf("%.2f", v) },
		"num":    report.FormatNumber,
		"change": func(drop float64) string { return report.FormatChange(-drop) },
		"pctp": func(p *float64) string {
			if p == nil {
				return "–"
			}
			return report.FormatPercent(*p)
		},
		"limitedAdvice": func() string { return report.LimitedAdvice },
		"about": func(metric string) string {
			for _, m := range results.Metrics() {
				if m.Name == metric {
					return m.About
				}
			}
			return ""
		},
		"describe": func(c report.Check) []string {
			m, l, g := c.Describe()
			return []string{m, l, g}
		},
		"fp": func(p *float64) string {
			if p == nil {
				return "–"
			}
			return fmt.Sprintf("%.2f", *p)
		},
	}
	return template.Must(template.New("report").Funcs(funcs).Parse(htmlSource))
}

const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>servebench · {{.S.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1a1a1a; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
.meta { color: #555; margin-top: 0; }
.conclusion { font-size: 1.1rem; background: #eef4fb; border-left: 4px solid #0072b2; padding: 0.6rem 0.8rem; }
table.about { margin: 1rem 0; }
table.about caption { text-align: left; font-weight: 600; padding-bottom: 0.3rem; }
table.about th { text-align: left; white-space: nowrap; background: none; color: #555; font-weight: normal; vertical-align: top; padding-right: 1.2rem; }
table.about td { text-align: left; white-space: normal; }
#latency tr.first td { border-top: 2px solid #ccc; }
#latency td:nth-child(2), #latency th:nth-child(2) { text-align: left; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.5rem 0; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid #e4e4e4; text-align: right; }
td { white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; }
tr.overall td { font-weight: 600; }
ul.findings li { margin: 0.35rem 0; }
figure { margin: 1.5rem 0; position: relative; cursor: zoom-in; }
figure.zoomed { position: fixed; inset: 0; margin: 0; padding: 1rem; background: #fff; z-index: 10; overflow: auto; cursor: zoom-out; }
figure.zoomed svg.plot { height: calc(100vh - 4rem); }
.readout { position: absolute; pointer-events: none; background: #fff; border: 1px solid #999; padding: 0.1rem 0.35rem; font-size: 0.85rem; white-space: nowrap; display: none; z-index: 11; }
figcaption { color: #555; font-size: 0.95rem; }
svg.plot { width: 100%; height: auto; display: block; }
pre { background: #f7f7f7; padding: 0.8rem; overflow: auto; font-size: 0.85rem; }
.note { color: #555; font-size: 0.9rem; }
.pass { color: #00734d; }
.limited { background: #fdecea; border-left: 4px solid #b3261e; padding: 0.6rem 0.8rem; }
.fail { color: #b3261e; font-weight: 600; }
tr.fail td { background: #fdecea; }
td.msg, th.msg { text-align: left; white-space: normal; font-family: ui-monospace, monospace; font-size: 0.85rem; }
</style>
</head>
<body>
<h1>servebench report: {{.S.Title}}</h1>
{{with .Corr}}{{with .Conclusion}}<p class="conclusion" id="conclusion">{{.}}</p>{{end}}{{end}}
{{if .S.Virtual}}<p class="meta" id="virtual"><strong>Virtual time</strong>: the simulator's engine on a virtual clock, no HTTP and no client.</p>{{end}}
<table class="about" id="about">
<caption>Workload and environment</caption>
<tbody>
{{range .About}}<tr><th scope="row">{{.Label}}</th><td>{{range $i, $l := .Lines}}{{if $i}}<br>{{end}}{{$l}}{{end}}</td></tr>
{{end}}</tbody>
</table>

{{with .S.Harness}}{{if .Limited}}<p class="limited" id="limited"><strong>Limited by the client:</strong> {{.Reason}}. {{limitedAdvice}}.</p>{{end}}{{end}}
<h2>Summary</h2>
<table id="summary">
{{if gt .S.Overall.Requests.Inputs 0}}<thead><tr><th>stage</th><th>ok</th><th>failed</th><th>dropped</th><th>canceled</th><th>req/s</th><th>inputs/s</th><th>tok/s</th><th>E2E p50</th><th>E2E p90</th><th>E2E p99</th><th>E2E max</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Overall}} class="overall"{{end}}><td>{{.Name}}</td><td>{{.Requests.OK}}</td><td>{{.Requests.Failed}}</td><td>{{.Requests.Dropped}}</td><td>{{.Requests.Canceled}}</td><td>{{f2 .RequestsPerSec}}</td><td>{{f1 .InputsPerSec}}</td><td>{{f1 .TotalTokensPerSec}}</td><td>{{ms .E2E "p50"}}</td><td>{{ms .E2E "p90"}}</td><td>{{ms .E2E "p99"}}</td><td>{{ms .E2E "max"}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Embeddings: latencies in milliseconds from the request being sent to the whole response; tok/s counts the inputs' tokens; warmup requests excluded.</p>
{{else}}<thead><tr><th>stage</th><th>ok</th><th>failed</th><th title="open loop: arrivals that found max_concurrency requests in flight and were never sent">dropped</th><th>canceled</th><th title="requests completed ok per second of the stage's window">req/s</th><th title="output tokens received per second of the stage's window">output tok/s</th><th title="{{about "ttft_ms"}}">TTFT p50</th><th title="{{about "ttft_ms"}}">TTFT p99</th><th title="{{about "itl_ms"}}">ITL p50</th><th title="{{about "itl_ms"}}">ITL p99</th><th title="{{about "tpot_ms"}}">TPOT p50</th><th title="{{about "e2e_ms"}}">E2E p50</th><th title="{{about "e2e_ms"}}">E2E p99</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Overall}} class="overall"{{end}}><td>{{.Name}}</td><td>{{.Requests.OK}}</td><td>{{.Requests.Failed}}</td><td>{{.Requests.Dropped}}</td><td>{{.Requests.Canceled}}</td><td>{{f2 .RequestsPerSec}}</td><td>{{f1 .OutputTokensPerSec}}</td><td>{{ms .TTFT "p50"}}</td><td>{{ms .TTFT "p99"}}</td><td>{{ms .ITL "p50"}}</td><td>{{ms .ITL "p99"}}</td><td>{{ms .TPOT "p50"}}</td><td>{{ms .E2E "p50"}}</td><td>{{ms .E2E "p99"}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Latencies in milliseconds unless a unit is given; TTFT from the request being sent; warmup requests excluded.</p>
<h3>Throughput</h3>
<table id="throughput">
<thead><tr><th>stage</th><th>requests/s</th><th>output tok/s</th><th>peak output tok/s</th><th>total tok/s</th><th>peak in flight</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Overall}} class="overall"{{end}}><td>{{.Name}}</td><td>{{f2 .RequestsPerSec}}</td><td>{{num .OutputTokensPerSec}}</td><td>{{num .PeakOutputTokensPerSec}}</td><td>{{num .TotalTokensPerSec}}</td><td>{{.PeakInFlight}}</td></tr>
{{end}}</tbody>
</table>
{{with .Spec}}<h3>Speculative decoding</h3>
<table id="specdecode">
<thead><tr><th>stage</th><th>source</th><th title="accepted ÷ tested draft tokens: it falls as drafts grow, whatever the drafter">acceptance rate</th><th title="tokens a request gains per target step: compare this across draft lengths">tokens per step</th><th>draft tokens accepted</th><th>requests that returned counts</th></tr></thead>
<tbody>
{{range .}}<tr{{if .Overall}} class="overall"{{end}}><td>{{.Stage}}</td><td>{{.Source}}</td><td>{{.Rate}}</td><td>{{.Length}}</td><td>{{.Accepted}}</td><td>{{.Of}}</td></tr>
{{end}}</tbody>
</table>{{end}}
<p class="note">Peak output tok/s: the most output tokens received in one whole second; total: input and output tokens; peak in flight: the most requests sent and not yet ended at once.</p>
<h3>Latency</h3>
<table id="latency">
<thead><tr><th>metric</th><th>stage</th><th>requests</th><th>mean</th><th title="standard deviation, of the population (as vLLM's std_*_ms)">std</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr></thead>
<tbody>
{{range .Latency}}{{$m := .Label}}{{$metric := .Metric}}{{range $i, $r := .Rows}}<tr class="{{if $r.Overall}}overall{{end}}{{if not $i}} first{{end}}"><td{{if not $i}} title="{{about $metric}}"{{end}}>{{if not $i}}{{$m}}{{end}}</td><td>{{$r.Stage}}</td><td>{{$r.Count}}</td><td>{{ms $r.Dist "mean"}}</td><td>{{ms $r.Dist "std"}}</td><td>{{ms $r.Dist "p50"}}</td><td>{{ms $r.Dist "p90"}}</td><td>{{ms $r.Dist "p99"}}</td><td>{{ms $r.Dist "max"}}</td></tr>
{{end}}{{end}}</tbody>
</table>
<p class="note">Milliseconds unless a unit is given; std is the standard deviation; ITL counts every token (a chunk of k tokens gives k gaps), so its requests column counts gaps.</p>
{{end}}{{with .S.Overall.TTFTByTurn}}
<h2 id="turns">TTFT by conversation turn</h2>
<table>
<thead><tr><th>turn</th><th>ok</th><th>TTFT p50</th><th>TTFT p90</th><th>TTFT p99</th><th>prompt tokens</th><th>cached</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Turn}}{{if .AndLater}}+{{end}}</td><td>{{.Count}}</td><td>{{ms .Dist "p50"}}</td><td>{{ms .Dist "p90"}}</td><td>{{ms .Dist "p99"}}</td><td>{{perReq .PromptTokens .Count}}</td><td>{{share .CachedTokens .PromptTokens}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Every stage's measured ok requests, by their turn in the conversation: the mean prompt (history included) and the share of it the server served from its prefix cache (– when it reports none).</p>
{{end}}
{{with .S.Verdict}}
<h2 id="verdict">Budgets: {{if .Pass}}<span class="pass">PASS</span>{{else if .Failed}}<span class="fail">FAIL</span>{{else}}<span class="fail">INCONCLUSIVE</span>{{end}}</h2>
<p>{{.}}{{with .Source}} · budgets from {{.}}{{end}}</p>
<table id="budgets">
<thead><tr><th>budget</th><th>measured</th><th>limit</th><th>margin</th><th>samples</th><th></th></tr></thead>
<tbody>
{{range .Checks}}{{$d := describe .}}<tr class="{{if .Pass}}pass{{else}}fail{{end}}"><td>{{.Name}}</td><td>{{index $d 0}}</td><td>{{index $d 1}}</td><td>{{index $d 2}}</td><td>{{.Samples}}</td><td>{{if .Pass}}ok{{else if eq .Status "inconclusive"}}inconclusive{{else}}FAIL{{end}}</td></tr>
{{end}}</tbody>
</table>
{{if .Warnings}}<ul class="note">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}

<h2>Findings</h2>
{{if .Findings}}<ul class="findings" id="findings">
{{range .Findings}}<li>{{.}}</li>
{{end}}</ul>{{else}}<p>No correlation could be computed (no request was sent).</p>{{end}}
{{with .Corr}}{{if .Details}}<h3>Detail</h3>
<p class="note">For the analyst: each stage's throughput change, throughput by KV-cache usage, the decode law's coefficients, Pearson r and the cross-checks.</p>
<ul class="findings" id="details">
{{range .Details}}<li>{{.}}</li>
{{end}}</ul>{{end}}{{end}}
{{with .Corr}}{{if .Stages}}
<table id="stages">
<thead><tr><th>stage</th><th>start tok/s</th><th>end tok/s</th><th>change</th><th>r(tok/s, KV)</th><th>r(tok/s, context)</th><th>TTFT waiting</th><th>preemptions</th><th>affected requests</th><th>verdict</th></tr></thead>
<tbody>
{{range .Stages}}<tr><td>{{.Name}}</td><td>{{with .Start}}{{f1 .TokensPerSec}}{{else}}–{{end}}</td><td>{{with .End}}{{f1 .TokensPerSec}}{{else}}–{{end}}</td><td>{{with .Drop}}{{change .}}{{else}}–{{end}}</td><td>{{fp .RKVUsage}}</td><td>{{fp .RContext}}</td><td>{{pctp .TTFTWaitingShare}}</td><td>{{with .Preemptions}}{{num .}}{{else}}–{{end}}</td><td>{{.AffectedRequests}}</td><td>{{.Verdict}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Windows of {{.WindowS}} s{{if .Aligned}} aligned with the {{.ScrapeOK}} scrapes of the server's /metrics{{end}}; start and end are the means of the first and last steady windows of each stage.</p>
{{end}}{{end}}

<h2>Plots</h2>
<p class="note">Point at a plot to read the value of the nearest point; click it to see it across the window, where the wheel zooms a panel about the pointer and redraws its axes for the range shown (a double click shows all of it again; Esc or a click closes it).</p>
{{range .Figures}}<figure id="plot-{{.Name}}" data-panels="{{.Panels}}" title="Click to enlarge">
<div class="readout" aria-live="polite"></div>
{{.SVG}}
<figcaption>{{.Title}} ({{.Name}}.png, {{.Name}}.svg){{range .Notes}} {{.}}{{end}}</figcaption>
</figure>
{{end}}

<h2>Errors</h2>
{{if .Errors}}<table id="errors">
<thead><tr><th>stage</th><th>error class</th><th>requests</th><th class="msg">first messages</th></tr></thead>
<tbody>
{{range .Errors}}<tr><td>{{.Stage}}</td><td>{{.Class}}</td><td>{{.Count}}</td><td class="msg">{{range .Messages}}<div>{{.}}</div>{{end}}</td></tr>
{{end}}</tbody>
</table>{{else}}<p id="errors">No request failed.</p>{{end}}
{{if .S.Warnings}}<h3>Warnings</h3>
<ul>{{range .S.Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .S.Comparability}}
<h2 id="comparability">Beside other tools</h2>
<p class="note">What would differ if the same load were run with another benchmark client, and so what to line up before setting these figures beside its.</p>
<ul>{{range .S.Comparability}}<li>{{.}}</li>{{end}}</ul>{{end}}

<h2>Scenario</h2>
{{if .Scenario}}<pre id="scenario">{{.Scenario}}</pre>{{else}}<p>The results file holds no scenario.</p>{{end}}
<script>{{.Script}}</script>
</body>
</html>
`

// specRows is the speculative-decoding table: per stage, the server's
// series when it exports them, the requests' own counts when it does not
// or when the two disagree (report.Efficiency.ShowRequestSpec), as the
// terminal summary shows them.
func specRows(rows []htmlRow) []htmlSpec {
	var out []htmlSpec
	for _, st := range rows {
		e := st.Efficiency
		if e == nil {
			continue
		}
		if sd := e.SpecDecode; sd != nil {
			r := htmlSpec{Stage: st.Name, Overall: st.Overall, Source: "server's " + sd.Source,
				Rate: fmt.Sprintf("%.1f %%", 100*sd.AcceptanceRate), Length: fmt.Sprintf("%.3g (mean acceptance length)", sd.AcceptLength)}
			if sd.DraftTokens > 0 {
				r.Accepted = fmt.Sprintf("%.0f of %.0f", sd.Accepted, sd.DraftTokens)
			}
			out = append(out, r)
		}
		if rq := e.SpecDecodeRequests; e.ShowRequestSpec() {
			r := htmlSpec{Stage: st.Name, Overall: st.Overall, Source: rq.Source,
				Rate:     fmt.Sprintf("%.1f %%", 100*rq.AcceptanceRate),
				Accepted: fmt.Sprintf("%d of %d", rq.Accepted, rq.DraftTokens),
				Of:       fmt.Sprintf("%d of %d", rq.Requests, rq.OfRequests)}
			if rq.TokensPerStep > 0 {
				r.Length = fmt.Sprintf("%.3g (output ÷ (output − accepted), %d requests)", rq.TokensPerStep, rq.StepRequests)
			}
			out = append(out, r)
		}
	}
	return out
}

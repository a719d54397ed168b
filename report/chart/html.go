package chart

import (
	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/report"

	"github.com/servebench/servebench/report/correlate"

	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"
)

// HTMLName is the file name of the HTML report WriteFiles writes.
const HTMLName = "report.html"

// WriteHTML writes the HTML report: one self-contained page (plots inline
// as SVG, no script, style sheet, font or image loaded from anywhere) with
// the summary table, the correlation findings in sentences, the plots, the
// error table, the warnings and the resolved scenario. scenario is the
// resolved scenario JSON from the results header (may be nil).
func WriteHTML(w io.Writer, s *report.Summary, figs []Figure, scenario json.RawMessage) error {
	data := htmlData{S: s, Scenario: prettyJSON(scenario)}
	rows := append([]report.Stage(nil), s.Stages...)
	if len(s.Stages) != 1 {
		rows = append(rows, s.Overall)
	}
	for _, st := range rows {
		data.Rows = append(data.Rows, htmlRow{Stage: st, Overall: st.Index < 0})
	}
	for _, st := range rows {
		for _, class := range sortedKeys(st.Errors) {
			data.Errors = append(data.Errors, htmlError{Stage: st.Name, Class: class, Count: st.Errors[class],
				Messages: st.ErrorMessages[class]})
		}
	}
	if c := s.Correlation; c != nil {
		data.Findings = c.Findings
		data.Corr = c
	}
	for _, f := range figs {
		svg, err := inlineSVG(f.SVG)
		if err != nil {
			return fmt.Errorf("write HTML report: plot %s: %w", f.Name, err)
		}
		data.Figures = append(data.Figures, htmlFigure{Name: f.Name, Title: f.Title, SVG: svg})
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

// WriteFiles renders the plots of everything added to a (PNG and SVG) and
// the HTML report of s (a's summary, with its verdict if judged) into dir,
// and returns the paths written. The output is a pure function of the
// records added and the verdict.
func WriteFiles(dir string, a *report.Aggregate, s *report.Summary) ([]string, error) {
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

// inlineSVG strips the XML prolog and comment gonum writes before <svg, so
// the document can sit inside HTML, and makes it scale with the page.
func inlineSVG(doc []byte) (template.HTML, error) {
	i := bytes.Index(doc, []byte("<svg"))
	if i < 0 {
		return "", fmt.Errorf("no <svg> element")
	}
	svg := string(doc[i:])
	svg = strings.Replace(svg, "<svg ", `<svg class="plot" role="img" `, 1)
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
	S        *report.Summary
	Rows     []htmlRow
	Errors   []htmlError
	Findings []string
	Corr     *correlate.Correlation
	Figures  []htmlFigure
	Scenario string
}

type htmlRow struct {
	report.Stage
	Overall bool
}

type htmlError struct {
	Stage    string
	Class    string
	Count    int64
	Messages []string // the first distinct messages
}

type htmlFigure struct {
	Name, Title string
	SVG         template.HTML
}

func htmlTemplate() *template.Template {
	funcs := template.FuncMap{
		"ms": func(d report.Dist, p float64) string {
			if d.Count == 0 {
				return "–"
			}
			var v float64
			switch p {
			case 50:
				v = d.P50
			case 90:
				v = d.P90
			case 99:
				v = d.P99
			case 100:
				v = d.Max
			}
			return report.FormatMS(v, d.Count)
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
<title>servebench · {{.S.Scenario}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1a1a1a; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; }
.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin: 0.5rem 0; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid #e4e4e4; text-align: right; }
td { white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
thead th { background: #f4f4f4; }
tr.overall td { font-weight: 600; }
ul.findings li { margin: 0.35rem 0; }
figure { margin: 1.5rem 0; }
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
<h1>servebench report: {{.S.Scenario}}</h1>
<p class="meta">servebench {{.S.Version}} · target {{.S.Target}} · model {{.S.Model}} · started {{.S.Started.UTC.Format "2006-01-02 15:04:05 UTC"}}{{if gt .S.Files 1}} · {{.S.Files}} results files merged{{end}}{{if .S.Virtual}} · <strong>virtual time</strong> (the simulator's engine on a virtual clock, no HTTP){{end}}</p>

{{with .S.Harness}}{{if .Limited}}<p class="limited" id="limited"><strong>Limited by the client:</strong> {{.Reason}}. {{limitedAdvice}}.</p>{{end}}{{end}}
<h2>Summary</h2>
<table id="summary">
{{if gt .S.Overall.Requests.Inputs 0}}<thead><tr><th>stage</th><th>ok</th><th>failed</th><th>dropped</th><th>canceled</th><th>req/s</th><th>inputs/s</th><th>tok/s</th><th>E2E p50</th><th>E2E p90</th><th>E2E p99</th><th>E2E max</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Overall}} class="overall"{{end}}><td>{{.Name}}</td><td>{{.Requests.OK}}</td><td>{{.Requests.Failed}}</td><td>{{.Requests.Dropped}}</td><td>{{.Requests.Canceled}}</td><td>{{f2 .RequestsPerSec}}</td><td>{{f1 .InputsPerSec}}</td><td>{{f1 .TotalTokensPerSec}}</td><td>{{ms .E2E 50}}</td><td>{{ms .E2E 90}}</td><td>{{ms .E2E 99}}</td><td>{{ms .E2E 100}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Embeddings: latencies in milliseconds from the request being sent to the whole response; tok/s counts the inputs' tokens; warmup requests excluded.</p>
{{else}}<thead><tr><th>stage</th><th>ok</th><th>failed</th><th>dropped</th><th>canceled</th><th>req/s</th><th>output tok/s</th><th>TTFT p50</th><th>TTFT p99</th><th>ITL p50</th><th>ITL p99</th><th>TPOT p50</th><th>E2E p50</th><th>E2E p99</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Overall}} class="overall"{{end}}><td>{{.Name}}</td><td>{{.Requests.OK}}</td><td>{{.Requests.Failed}}</td><td>{{.Requests.Dropped}}</td><td>{{.Requests.Canceled}}</td><td>{{f2 .RequestsPerSec}}</td><td>{{f1 .OutputTokensPerSec}}</td><td>{{ms .TTFT 50}}</td><td>{{ms .TTFT 99}}</td><td>{{ms .ITL 50}}</td><td>{{ms .ITL 99}}</td><td>{{ms .TPOT 50}}</td><td>{{ms .E2E 50}}</td><td>{{ms .E2E 99}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Latencies in milliseconds; TTFT from the request being sent; warmup requests excluded.</p>
{{end}}{{with .S.Overall.TTFTByTurn}}
<h2 id="turns">TTFT by conversation turn</h2>
<table>
<thead><tr><th>turn</th><th>ok</th><th>TTFT p50</th><th>TTFT p90</th><th>TTFT p99</th><th>prompt tokens</th><th>cached</th></tr></thead>
<tbody>
{{range .}}<tr><td>{{.Turn}}{{if .AndLater}}+{{end}}</td><td>{{.Count}}</td><td>{{ms .Dist 50}}</td><td>{{ms .Dist 90}}</td><td>{{ms .Dist 99}}</td><td>{{perReq .PromptTokens .Count}}</td><td>{{share .CachedTokens .PromptTokens}}</td></tr>
{{end}}</tbody>
</table>
<p class="note">Every stage's measured ok requests, by their turn in the conversation: the mean prompt (history included) and the share of it the server served from its prefix cache (– when it reports none).</p>
{{end}}
{{with .S.Verdict}}
<h2 id="verdict">Budgets: {{if .Pass}}<span class="pass">PASS</span>{{else}}<span class="fail">FAIL</span>{{end}}</h2>
<p>{{.}}{{with .Source}} · budgets from {{.}}{{end}}</p>
<table id="budgets">
<thead><tr><th>budget</th><th>measured</th><th>limit</th><th>margin</th><th>samples</th><th></th></tr></thead>
<tbody>
{{range .Checks}}{{$d := describe .}}<tr class="{{if .Pass}}pass{{else}}fail{{end}}"><td>{{.Name}}</td><td>{{index $d 0}}</td><td>{{index $d 1}}</td><td>{{index $d 2}}</td><td>{{.Samples}}</td><td>{{if .Pass}}ok{{else}}FAIL{{end}}</td></tr>
{{end}}</tbody>
</table>
{{if .Warnings}}<ul class="note">{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{end}}

<h2>Findings</h2>
{{if .Findings}}<ul class="findings" id="findings">
{{range .Findings}}<li>{{.}}</li>
{{end}}</ul>{{else}}<p>No correlation could be computed (no request was sent).</p>{{end}}
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
{{range .Figures}}<figure id="plot-{{.Name}}">
{{.SVG}}
<figcaption>{{.Title}} ({{.Name}}.png, {{.Name}}.svg)</figcaption>
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

<h2>Scenario</h2>
{{if .Scenario}}<pre id="scenario">{{.Scenario}}</pre>{{else}}<p>The results file holds no scenario.</p>{{end}}
</body>
</html>
`

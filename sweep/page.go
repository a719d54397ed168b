package sweep

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/scenario"
)

// FileHTML is the sweep's page.
const FileHTML = chart.SweepHTMLName

// Page builds sweep.html's content from a summary: the answer in a
// sentence, a row per value, the budgets, the trade-off plot with the
// budget lines, the load curves and the Pareto plot.
func Page(s *Summary) *chart.SweepPage {
	pg := &chart.SweepPage{Scenario: s.Scenario, Kind: "sweep", Parameters: s.Parameters, Started: s.Started, Runs: len(s.Runs),
		Answer: s.Recommendation.Reason, Answered: s.Recommendation.Label != "" || anyAnswer(s.Search),
		Columns: []string{"runs", "ok", "failed", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "TPOT p50", "tok/s per user", "output tok/s", "req/s"}}
	if len(s.Search) > 0 {
		pg.Kind = "search"
	} else if s.Recommendation.Label != "" {
		pg.Answer = "Recommended: " + s.Recommendation.Label + ". " + s.Recommendation.Reason
	}
	if pg.Answer == "" {
		pg.Answer = "No answer yet: no run has finished."
	}
	for _, r := range s.Search {
		row := chart.SweepPageSearch{Label: r.Label, Answer: "–", Confidence: r.Confidence, Reason: r.Reason}
		if r.Answer != nil {
			row.Answer = fmtVal(*r.Answer) + " " + r.Unit
		}
		hi := "∞"
		if r.Bracket[1] != nil {
			hi = fmtVal(*r.Bracket[1])
		}
		if r.Bracket[0] != nil {
			row.Bracket = fmt.Sprintf("[%s, %s) %s", fmtVal(*r.Bracket[0]), hi, r.Unit)
		}
		pg.Searches = append(pg.Searches, row)
	}
	if b := s.Budgets; b != nil {
		if b.Overall != nil {
			for _, bud := range b.Overall.List() {
				for _, l := range bud.Limits.List() {
					pg.Budgets = append(pg.Budgets, "overall."+bud.Metric+"."+l.String())
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(b.Stages)) {
			for _, bud := range b.Stages[name].List() {
				for _, l := range bud.Limits.List() {
					pg.Budgets = append(pg.Budgets, name+"."+bud.Metric+"."+l.String())
				}
			}
		}
	}
	notes := probeNotes(s)
	marked := map[string]bool{s.Recommendation.Label: s.Recommendation.Label != "", answerLabel(s): true}
	for _, p := range s.Points {
		row := chart.SweepPageRow{Label: p.Label, Pass: p.BudgetsMet, Verdict: p.Verdict, Marked: marked[p.Label], Note: notes[p.Label]}
		row.Cells = append(row.Cells, strconv.Itoa(p.Runs+p.Failed))
		if m := p.Metrics; m != nil {
			perUser := "–"
			if m.TPOTP50 > 0 {
				perUser = num1(1000 / m.TPOTP50)
			}
			row.Cells = append(row.Cells, num1(m.OK), num1(m.Failed), num1(m.TTFTP50), num1(m.TTFTP99), num1(m.ITLP50),
				num1(m.ITLP99), num1(m.TPOTP50), perUser, num1(m.OutputTokensPerSec), strconv.FormatFloat(m.RequestsPerSec, 'f', 2, 64))
			row.CIs = rowCIs(m)
		} else {
			for range len(pg.Columns) - 1 {
				row.Cells = append(row.Cells, "–")
			}
		}
		pg.Rows = append(pg.Rows, row)
	}
	pg.CINote = tableCINote(s.Points)
	for _, r := range s.Runs {
		if r.Status == StatusFailed {
			pg.Failures = append(pg.Failures, fmt.Sprintf("%s (run %d): %s", r.Label, r.Repeat, firstLine(r.Error)))
		}
	}
	for _, w := range s.Warnings {
		pg.Notes = append(pg.Notes, "Warning: "+w+".")
	}
	sp := Figure(s)
	pg.Sweep = sp
	pg.Load, pg.Pareto = loadPlots(s)
	switch {
	case pg.Load == nil:
		pg.Omitted = append(pg.Omitted, "No load curves: no run has figures.")
	case loadParam(s) == "" && flatLoad(pg.Load):
		pg.Load = nil
		pg.Omitted = append(pg.Omitted, "No load curves: every value served the same load (the sweep varies a server setting at one offered load).")
	}
	return pg
}

// flatLoad reports whether the loads of a plot are all within 5 % of one
// another.
func flatLoad(lp *chart.LoadPlot) bool {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range lp.Series {
		for _, p := range s.Points {
			lo, hi = min(lo, p.Load), max(hi, p.Load)
		}
	}
	return hi <= lo*1.05
}

func anyAnswer(rs []SearchResult) bool {
	for _, r := range rs {
		if r.Answer != nil {
			return true
		}
	}
	return false
}

// probeNotes says, per probed value, how the search decided it.
func probeNotes(s *Summary) map[string]string {
	out := map[string]string{}
	for _, r := range s.Search {
		for _, pr := range r.Probes {
			note := pr.Decided
			if n := pr.Passed + pr.Failed; n > 1 {
				note += fmt.Sprintf(" (%d of %d runs passed)", pr.Passed, n)
			}
			if len(pr.Near) > 0 {
				note += "; near the boundary: " + strings.Join(pr.Near, ", ")
			}
			out[pr.Label] = note
		}
	}
	return out
}

// loadParam is the parameter whose values are a load: the searched one,
// or a swept stage rate or concurrency.
func loadParam(s *Summary) string {
	if len(s.Search) > 0 {
		return s.Search[0].Parameter
	}
	for _, p := range s.Parameters {
		if _, ok := (&scenario.SweepSearch{Parameter: p}).Target(); ok {
			return p
		}
	}
	return ""
}

// loadPlots builds the load curves and the Pareto plot: x is the load
// parameter's value, one series per combination of the other parameters;
// without a load parameter, x is the requests/s served and there is one
// series.
func loadPlots(s *Summary) (*chart.LoadPlot, *chart.ParetoPlot) {
	lp := loadParam(s)
	xLabel := "requests/s served"
	if lp != "" {
		xLabel = lp
		if strings.HasSuffix(lp, ".rate") {
			xLabel += " (requests/s offered)"
		} else {
			xLabel += " (closed-loop workers, or sessions held open)"
		}
	}
	var order []string
	series := map[string]*chart.LoadSeries{}
	for _, p := range s.Points {
		m := p.Metrics
		if m == nil {
			continue
		}
		pt := chart.LoadPoint{Label: p.Label, Load: m.RequestsPerSec, TTFTP50: m.TTFTP50, TTFTP99: m.TTFTP99,
			ITLP50: m.ITLP50, ITLP99: m.ITLP99, TPOTP50: m.TPOTP50, OutputTokensPerSec: m.OutputTokensPerSec, Pass: p.BudgetsMet,
			Verdict: p.Verdict, ParetoX: paretoX(s.ParetoX, m)}
		key := ""
		if lp != "" {
			x, err := strconv.ParseFloat(p.Values[lp], 64)
			if err != nil {
				continue
			}
			pt.Load, pt.Label = x, p.Values[lp]
			var others []string
			for _, name := range s.Parameters {
				if name != lp {
					others = append(others, name+"="+p.Values[name])
				}
			}
			key = strings.Join(others, ",")
		} else if len(s.Parameters) == 1 {
			pt.Label = p.Values[s.Parameters[0]]
		}
		if series[key] == nil {
			series[key] = &chart.LoadSeries{Name: key}
			order = append(order, key)
		}
		series[key].Points = append(series[key].Points, pt)
	}
	if len(order) == 0 {
		return nil, nil
	}
	var out []chart.LoadSeries
	for _, k := range order {
		ls := *series[k]
		slices.SortStableFunc(ls.Points, func(a, b chart.LoadPoint) int {
			return cmpFloat(a.Load, b.Load)
		})
		out = append(out, ls)
	}
	pp := &chart.ParetoPlot{Title: fmt.Sprintf("%q: output tokens/s per user against total", s.Scenario), Series: out}
	if label := paretoLabel(s.ParetoX); label != "" {
		pp.Title = fmt.Sprintf("%q: output tokens/s per user against %s", s.Scenario, label)
		pp.XLabel, pp.XLowerIsBetter = label, s.ParetoX == scenario.ParetoUSDPerMTok
	}
	return &chart.LoadPlot{Title: fmt.Sprintf("%q: latency and throughput against load", s.Scenario), XLabel: xLabel, Series: out}, pp
}

// paretoX is a point's x on the Pareto plot's axis (sweep.pareto_x); 0
// when it has no such figure (no telemetry, no price).
func paretoX(axis string, m *Metrics) float64 {
	switch axis {
	case scenario.ParetoTokensPerSecPerGPU:
		if m.GPUs > 0 {
			return m.OutputTokensPerSec / m.GPUs
		}
	case scenario.ParetoTokensPerJoule:
		return m.TokensPerJoule
	case scenario.ParetoUSDPerMTok:
		return m.USDPerMTok
	}
	return 0
}

// paretoLabel is the x axis's label for sweep.pareto_x; "" for the
// default, total output tokens/s.
func paretoLabel(axis string) string {
	switch axis {
	case scenario.ParetoTokensPerSecPerGPU:
		return "output tokens/s per GPU"
	case scenario.ParetoTokensPerJoule:
		return "output tokens per joule (tokens/s per W)"
	case scenario.ParetoUSDPerMTok:
		return "$ per 1M output tokens (lower is better)"
	}
	return ""
}

// writePage writes sweep.html.
func writePage(dir string, s *Summary) error {
	var b bytes.Buffer
	if err := chart.WriteSweepHTML(&b, Page(s)); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, FileHTML), b.Bytes()); err != nil {
		return fmt.Errorf("sweep page: %w", err)
	}
	return nil
}

// rowCIs are the 95 % intervals under a row's cells ("lo–hi"), in the
// order of Page's columns: none for the counts and the request rate; the
// per-user speed's is the TPOT p50's, inverted.
func rowCIs(m *Metrics) []string {
	iv := func(key string) string {
		if lo, hi, ok := m.Interval(key); ok {
			return ciNum(lo) + "–" + ciNum(hi)
		}
		return ""
	}
	perUser := ""
	if lo, hi, ok := m.Interval("tpot_p50_ms"); ok && lo > 0 {
		perUser = ciNum(1000/hi) + "–" + ciNum(1000/lo)
	}
	return []string{"", "", "", iv("ttft_p50_ms"), iv("ttft_p99_ms"), iv("itl_p50_ms"), iv("itl_p99_ms"), iv("tpot_p50_ms"),
		perUser, iv("output_tokens_per_s"), ""}
}

// tableCINote says what the intervals under the table's figures are;
// "" when no value has one.
func tableCINote(points []Point) string {
	var run, repeats bool
	for _, p := range points {
		if m := p.Metrics; m != nil && len(m.CI) > 0 {
			run, repeats = run || m.CIFrom == "run", repeats || m.CIFrom == "repeats"
		}
	}
	var from []string
	if run {
		from = append(from, "a single run's own samples (order statistics for the percentiles, batch means over the run's windows for the throughput)")
	}
	if repeats {
		from = append(from, "over repeats, the hull of the runs' own intervals averaged and a Student-t interval over the runs' values")
	}
	if len(from) == 0 {
		return ""
	}
	return "Under each figure, its 95 % interval: from " + strings.Join(from, "; or, ") + ". A figure without one had too few samples for one."
}

// ciNum is an interval's bound: three significant digits, whole from 100.
func ciNum(x float64) string {
	if math.Abs(x) >= 100 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

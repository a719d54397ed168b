package sweep

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/servebench/servebench/internal/atomicfile"
	"github.com/servebench/servebench/report/chart"
	"github.com/servebench/servebench/results"
)

// Figure builds the trade-off plot of a sweep summary: one point per
// combination. With a single numeric parameter the points sit at their
// values; otherwise they are evenly spaced and labelled.
func Figure(s *Summary) *chart.SweepPlot {
	sp := &chart.SweepPlot{
		Title:       fmt.Sprintf("sweep %q: latency and throughput against %s", s.Scenario, strings.Join(s.Parameters, ", ")),
		XLabel:      strings.Join(s.Parameters, ", "),
		Recommended: -1,
	}
	sp.Budgets = plotBudgets(s.Budgets)
	if len(s.Search) > 0 {
		sp.RecommendedLabel = "capacity"
		sp.Title = fmt.Sprintf("search %q: latency and throughput against %s", s.Scenario, strings.Join(s.Parameters, ", "))
	}
	var single []string
	for i, p := range s.Points {
		pt := chart.SweepPlotPoint{Label: p.Label, Missing: p.Metrics == nil, Pass: p.BudgetsMet, Verdict: p.Verdict}
		if len(s.Parameters) == 1 {
			pt.Label = p.Values[s.Parameters[0]]
			single = append(single, pt.Label)
		}
		if m := p.Metrics; m != nil {
			pt.TTFTP50, pt.TTFTP99, pt.ITLP50, pt.ITLP99 = m.TTFTP50, m.TTFTP99, m.ITLP50, m.ITLP99
			pt.OutputTokensPerSec = m.OutputTokensPerSec
			for k, v := range m.Budgeted {
				metric, stat, _ := strings.Cut(k, ".")
				if pt.Stats == nil {
					pt.Stats = map[string]float64{}
				}
				pt.Stats[strings.TrimSuffix(metric, "_ms")+"."+stat] = v
			}
			pt.CI = plotCI(m)
		}
		if s.Recommendation.Label != "" && p.Label == s.Recommendation.Label {
			sp.Recommended = i
		}
		if a := answerLabel(s); a != "" && p.Label == a {
			sp.Recommended = i
		}
		sp.Points = append(sp.Points, pt)
	}
	if xs, ok := chart.SweepX(single); ok && len(single) == len(sp.Points) {
		sp.Numeric = true
		for i := range sp.Points {
			sp.Points[i].X = xs[i]
		}
	}
	return sp
}

// answerLabel is the label of the point of the best capacity a search
// found, or "".
func answerLabel(s *Summary) string {
	for _, r := range s.Search {
		if r.Answer == nil || r.Label != s.Recommendation.Label {
			continue
		}
		for _, pr := range r.Probes {
			if pr.Value == *r.Answer {
				return pr.Label
			}
		}
	}
	return ""
}

// plotBudgets are the overall budgets a sweep plot can draw: TTFT and ITL
// percentiles, mean or max on their panels, and the minimum output
// throughput.
func plotBudgets(b *results.Budgets) []chart.SweepBudget {
	if b == nil || b.Overall == nil {
		return nil
	}
	var out []chart.SweepBudget
	for _, f := range []struct {
		metric, panel, name, unit string
		limits                    *results.Limits
	}{
		{"ttft_ms", "ttft", "TTFT", "ms", b.Overall.Get("ttft_ms")},
		{"itl_ms", "itl", "ITL", "ms", b.Overall.Get("itl_ms")},
		{"output_tokens_per_s", "throughput", "output tokens/s", "", b.Overall.Get("output_tokens_per_s")},
	} {
		for _, l := range f.limits.List() {
			name := fmt.Sprintf("%s %s %s", f.name, l.Stat, l.String()[len(l.Stat)+1:])
			if f.unit != "" {
				name += " " + f.unit
			}
			if f.panel == "throughput" {
				name = fmt.Sprintf("%s ≥ %g", f.name, l.Value)
			}
			out = append(out, chart.SweepBudget{Panel: f.panel, Stat: l.Stat, Name: name, Limit: l.Value})
		}
	}
	return out
}

// plot writes sweep.png and sweep.svg; nothing when no run produced figures.
func (p *Plan) plot(dir string, s *Summary) error {
	have := false
	for _, pt := range s.Points {
		have = have || pt.Metrics != nil
	}
	if !have {
		return nil
	}
	png, svg, err := Figure(s).Render()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, FilePNG), png); err != nil {
		return fmt.Errorf("sweep plot: %w", err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, FileSVG), svg); err != nil {
		return fmt.Errorf("sweep plot: %w", err)
	}
	return writePage(dir, s)
}

// plotCI are a point's intervals under the plot's keys: "ttft.p50",
// "itl.p99", "ttft.p90" (a budgeted statistic), "throughput".
func plotCI(m *Metrics) map[string][2]float64 {
	if len(m.CI) == 0 {
		return nil
	}
	out := map[string][2]float64{}
	for key, iv := range m.CI {
		switch key {
		case "output_tokens_per_s":
			out["throughput"] = iv
		case "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms":
			metric, stat, _ := strings.Cut(strings.TrimSuffix(key, "_ms"), "_")
			out[metric+"."+stat] = iv
		default:
			if metric, stat, ok := strings.Cut(key, "."); ok {
				out[strings.TrimSuffix(metric, "_ms")+"."+stat] = iv
			}
		}
	}
	return out
}

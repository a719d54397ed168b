package sweep

import (
	"testing"

	"github.com/servebench/servebench/report"
)

// TestBudgetedStats: a run judged on the TTFT p90 carries its p90 to the
// plot, and a value's mean over its runs averages it; a statistic a run
// lacks is not averaged, and figures without a verdict carry none.
func TestBudgetedStats(t *testing.T) {
	t.Parallel()
	run := func(p90, itlMean float64) *report.Summary {
		s := &report.Summary{Verdict: &report.Verdict{Checks: []report.Check{
			{Scope: "overall", Metric: "ttft_ms", Stat: "p90"}, {Scope: "overall", Metric: "ttft_ms", Stat: "p99"},
			{Scope: "overall", Metric: "itl_ms", Stat: "mean"}, {Scope: "overall", Metric: "error_rate", Stat: "max"},
			{Scope: "decode", Metric: "ttft_ms", Stat: "p95"}}}}
		s.Overall.TTFT = report.Dist{Count: 100, P90: p90, P99: 2 * p90}
		s.Overall.ITL = report.Dist{Count: 100, Mean: itlMean}
		return s
	}
	m := metricsOf(run(120, 7))
	if len(m.Budgeted) != 2 || m.Budgeted["ttft_ms.p90"] != 120 || m.Budgeted["itl_ms.mean"] != 7 {
		t.Errorf("budgeted = %v, want the overall TTFT p90 and ITL mean only", m.Budgeted)
	}
	other := metricsOf(run(180, 9))
	delete(other.Budgeted, "itl_ms.mean")
	mean := meanMetrics([]*Metrics{m, other})
	if len(mean.Budgeted) != 1 || mean.Budgeted["ttft_ms.p90"] != 150 {
		t.Errorf("mean budgeted = %v, want the TTFT p90's mean, 150, alone", mean.Budgeted)
	}
	if m := metricsOf(&report.Summary{}); m.Budgeted != nil {
		t.Errorf("no verdict: budgeted = %v", m.Budgeted)
	}
}

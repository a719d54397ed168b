package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// TestSweepRanksByGoodputPerDollar is issue 25's sweep acceptance, on the
// simulator with its power model in virtual time: the recommendation is
// the value with the most good output tokens per dollar under the
// budgets, which is not the one with the most throughput (the largest
// batch misses the TPOT objective for most requests), and the Pareto plot
// takes $ per 1M output tokens as its axis, the frontier drawn on it.
func TestSweepRanksByGoodputPerDollar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, err := NewPlan(t.Context(), parse(t, `name: per-dollar
target: {url: "sim://tiny?gpus=2&idle_power_w=90&max_power_w=420"}
request: {ignore_eos: true}
prompts: {input_tokens: 64, output_tokens: 48}
load: {stages: [{concurrency: 16, requests: 64}]}
slo: {tpot_ms: 3.4}
cost: {per_gpu_hour: 3.5}
budgets: {overall: {error_rate: {max: 0}}}
sweep:
  parameters: {max_num_seqs: [2, 4, 16]}
  rank_by: goodput_per_dollar
  pareto_x: usd_per_mtok
`))
	if err != nil {
		t.Fatal(err)
	}
	virtual := func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
		return run.Run(ctx, sc, run.Options{Dir: dir, Virtual: true, NoPlots: true})
	}
	s, err := p.Execute(context.Background(), Options{Dir: dir, Run: virtual})
	if err != nil {
		t.Fatal(err)
	}
	best, fastest := -1, -1
	for i, pt := range s.Points {
		m := pt.Metrics
		if m == nil || m.USDPerMTok <= 0 || m.GPUs != 2 {
			t.Fatalf("%s: metrics %+v, want energy and cost on two GPUs", pt.Label, m)
		}
		t.Logf("%s: %.0f tok/s, %.4g good tokens/$, $%.4g per 1M tokens, %.4g J/token", pt.Label, m.OutputTokensPerSec, m.GoodTokensPerUSD, m.USDPerMTok, m.JoulesPerToken)
		if best < 0 || m.GoodTokensPerUSD > s.Points[best].Metrics.GoodTokensPerUSD {
			best = i
		}
		if fastest < 0 || m.OutputTokensPerSec > s.Points[fastest].Metrics.OutputTokensPerSec {
			fastest = i
		}
	}
	rec := s.Recommendation
	if rec.Label != s.Points[best].Label || !strings.Contains(rec.Basis, "per dollar") || !strings.Contains(rec.Reason, "good output tokens per dollar") {
		t.Errorf("recommendation %+v, want %s by good tokens per dollar", rec, s.Points[best].Label)
	}
	if best == fastest {
		t.Errorf("the most tokens per dollar is also the fastest (%s): the test does not tell the rankings apart", s.Points[best].Label)
	}
	_, pp := loadPlots(s)
	if pp == nil || !strings.HasPrefix(pp.XLabel, "$ per 1M output tokens") || !pp.XLowerIsBetter {
		t.Fatalf("pareto plot %+v, want $ per 1M output tokens on x, lower better", pp)
	}
	front := pp.Frontier(pp.Series[0])
	if len(front) == 0 {
		t.Fatal("empty frontier")
	}
	cheapest := front[0] // in order of x: the cheapest first
	for _, pt := range pp.Series[0].Points {
		if pt.ParetoX < pp.Series[0].Points[cheapest].ParetoX {
			t.Errorf("%s costs less than the frontier's cheapest point", pt.Label)
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "per 1M output tokens") {
		t.Error("sweep.html does not show the Pareto plot's $ per 1M tokens axis")
	}
}

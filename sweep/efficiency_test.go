package sweep

import (
	"context"
	"os"
	"path/filepath"
	"slices"
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

// TestSweepWarnsOfDraftLengths sweeps the simulator's draft length with
// one drafter (each token accepted with chance 0.8 while the draft
// holds): the acceptance rate falls as drafts grow while the acceptance
// length rises, and the sweep says so, in sweep.json, its text and its
// page, naming each value's figures. A sweep whose values all drafted
// alike says nothing of it.
func TestSweepWarnsOfDraftLengths(t *testing.T) {
	t.Parallel()
	sweepOf := func(ks string) *Summary {
		p, err := NewPlan(t.Context(), parse(t, `name: drafts
target: {url: "sim://tiny?draft_acceptance=0.8"}
request: {ignore_eos: true}
prompts: {input_tokens: 32, output_tokens: 64}
scrape: {interval: 250ms}
load: {stages: [{concurrency: 4, requests: 16}]}
sweep:
  parameters: {num_speculative_tokens: `+ks+`, max_num_seqs: [8]}
`))
		if err != nil {
			t.Fatal(err)
		}
		virtual := func(ctx context.Context, sc *scenario.Scenario, dir string) (*report.Summary, error) {
			return run.Run(ctx, sc, run.Options{Dir: dir, Virtual: true, NoPlots: true})
		}
		s, err := p.Execute(context.Background(), Options{Dir: t.TempDir(), Run: virtual})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := sweepOf("[1, 4]")
	if len(s.Points) != 2 {
		t.Fatalf("points %+v", s.Points)
	}
	short, long := s.Points[0].Metrics, s.Points[1].Metrics
	t.Logf("k=1: rate %.3f, length %.3f, drafted %.3g; k=4: rate %.3f, length %.3f, drafted %.3g",
		short.SpecAcceptanceRate, short.SpecAcceptLength, short.SpecDraftLength, long.SpecAcceptanceRate, long.SpecAcceptLength, long.SpecDraftLength)
	if !(short.SpecAcceptanceRate > long.SpecAcceptanceRate && short.SpecAcceptLength < long.SpecAcceptLength) {
		t.Fatalf("the simulator's drafts do not show the case: k=1 %+v, k=4 %+v", short, long)
	}
	t.Log(s.Warnings)
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "compare the values by the mean acceptance length") ||
		!strings.Contains(s.Warnings[0], s.Points[0].Label+": draft length 1, acceptance rate") {
		t.Fatalf("warnings %q", s.Warnings)
	}
	var text strings.Builder
	if err := WriteText(&text, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "warning: "+s.Warnings[0]) {
		t.Errorf("the sweep's text lacks the warning:\n%s", text.String())
	}
	if pg := Page(s); !slices.Contains(pg.Notes, "Warning: "+s.Warnings[0]+".") {
		t.Errorf("sweep.html's notes %q lack the warning", pg.Notes)
	}
	if same := sweepOf("[3]"); len(same.Warnings) != 0 {
		t.Errorf("one draft length, warnings %q", same.Warnings)
	}
}

package run

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// efficiencyDoc loads the simulator with its power model and a draft
// model on, the GPU page read every 250 ms.
const efficiencyDoc = `name: efficiency
target: {url: "sim://tiny?gpus=2&idle_power_w=90&max_power_w=420&num_speculative_tokens=3&draft_acceptance=0.75&draft_acceptance_decay=0.9&per_draft_token_us=15"}
request: {ignore_eos: true, include_usage: true, continuous_usage: true}
prompts: {input_tokens: 200, output_tokens: 120}
scrape: {interval: 250ms}
cost: {per_gpu_hour: 3.5}
budgets: {overall: {joules_per_token: {max: 0.1}, usd_per_mtok: {max: 100}}}
load:
  stages: [{concurrency: 6, requests: 120}]
`

// TestEfficiencyOnTheSimulator is issue 25's acceptance on the simulator:
// with a power model and a draft model configured, joules per output token
// within 1 % of the model's truth (the engine's exact energy over the
// measured window, from its first send to its last end), the mean
// acceptance length exactly the engine's, and $/1M output tokens exact for
// the price (two GPUs counted by the telemetry).
func TestEfficiencyOnTheSimulator(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("efficiency.yaml", []byte(efficiencyDoc))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		t.Fatal(err)
	}
	hdr, spec, err := virtualHeader(sc, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{agg: report.New()}
	w.put(results.HeaderRecord(hdr), 0)
	var v *virtualClock
	var firstSent, lastEnd time.Duration = -1, 0
	var energyAtEnd float64
	var tokens int
	put := func(rec results.Record, inFlight int) {
		if r := rec.Result; r != nil && r.Outcome == results.OK {
			if firstSent < 0 || r.Sent < firstSent {
				firstSent = r.Sent
			}
			if r.End >= lastEnd {
				// Records are put at their end on the virtual clock:
				// the engine's energy now is the energy at this end.
				lastEnd = r.End
				energyAtEnd, _ = v.eng.Energy()
			}
			tokens += r.OutputTokens
		}
		w.put(rec, inFlight)
	}
	if v, err = newVirtualClock(context.Background(), sc, cfg, DefaultGrace, put); err != nil {
		t.Fatal(err)
	}
	if err := v.run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum := judge(w.agg, spec)
	st := sum.Overall
	e := st.Efficiency
	if e == nil || e.Energy == nil || e.SpecDecode == nil || e.Cost == nil {
		t.Fatalf("efficiency = %+v", e)
	}
	// No step runs before the first request is sent: the GPUs idled.
	truthJ := energyAtEnd - 2*90*firstSent.Seconds()
	truth := truthJ / float64(tokens)
	if got := e.JoulesPerToken; math.Abs(got-truth) > 0.01*truth || e.Energy.Method != results.EnergyCounter || e.Energy.GPUs != 2 {
		t.Errorf("%.6f J per token (%s, %d GPUs), want %.6f ±1 %% (%.1f J over %d tokens)", got, e.Energy.Method, e.Energy.GPUs, truth, truthJ, tokens)
	}
	t.Logf("J/token %.6f against the model's %.6f (%+.3f %%); power mean %.1f W peak %.1f W; interval %v",
		e.JoulesPerToken, truth, 100*(e.JoulesPerToken/truth-1), e.Energy.AvgPowerW, e.Energy.PeakPowerW, e.JoulesPerTokenCI)

	if g := sum.Correlation.GPU; g == nil || g.PowerW == nil || g.Util == nil || g.GPUs != 2 {
		t.Errorf("correlation's GPU = %+v, want power and utilisation of 2 GPUs on the timeline", g)
	}
	// The budgets are judged on the efficiency figures: 0.154 J a token
	// misses 0.1; the price meets $100.
	if v := sum.Verdict; v == nil || len(v.Checks) != 2 || v.Checks[0].Status != "missed" || v.Checks[1].Status != "met" ||
		*v.Checks[0].Measured != e.JoulesPerToken {
		t.Errorf("verdict %+v", v)
	}
	es := v.eng.Stats()
	if want := 1 + float64(es.SpecAccepted)/float64(es.SpecDrafts); e.SpecDecode.AcceptLength != want {
		t.Errorf("mean acceptance length %v, want the engine's %v exactly", e.SpecDecode.AcceptLength, want)
	}
	if e.SpecDecode.AcceptLength <= 1.5 || len(e.SpecDecode.PerPosition) != 3 {
		t.Errorf("spec decode %+v: want drafts of 3 mostly accepted", e.SpecDecode)
	}

	span := (lastEnd - firstSent).Seconds()
	wantUSD := 2 * 3.5 * span / 3600
	if got := e.Cost.USDPerMTok; math.Abs(got-wantUSD/float64(tokens)*1e6) > 1e-6 {
		t.Errorf("$%v per 1M output tokens, want $%v (%d tokens, %.3f s, 2 GPUs at $3.5)", got, wantUSD/float64(tokens)*1e6, tokens, span)
	}
	// Per-token ITL divides each multi-token chunk; the per-chunk figure
	// keeps the gaps, so it is the larger.
	if st.ITL.Count <= st.ITLChunk.Count || st.ITLChunk.P50 <= st.ITL.P50 {
		t.Errorf("ITL per token %d samples p50 %.3f ms, per chunk %d samples p50 %.3f ms", st.ITL.Count, st.ITL.P50, st.ITLChunk.Count, st.ITLChunk.P50)
	}
	if tpot := st.TPOT.Mean; math.Abs(st.ITL.Mean-tpot) > 0.02*tpot {
		t.Errorf("ITL mean %.4f ms, TPOT mean %.4f ms: per-token ITL should average to TPOT", st.ITL.Mean, tpot)
	}
}

// TestSpecChunksWithoutContinuousUsage: with a draft and no continuous
// usage, the client cannot count a chunk's tokens, and the summary says
// that per-token ITL spreads them evenly.
func TestSpecChunksWithoutContinuousUsage(t *testing.T) {
	t.Parallel()
	doc := strings.Replace(efficiencyDoc, "continuous_usage: true", "continuous_usage: false", 1)
	doc = strings.Replace(doc, "requests: 120", "requests: 24", 1)
	sc, err := scenario.Parse("efficiency.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Simulate(context.Background(), sc, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range sum.Warnings {
		found = found || strings.Contains(w, "without request.continuous_usage the client cannot tell how many each carried")
	}
	if !found {
		t.Errorf("warnings %q lack the one on speculative chunks", sum.Warnings)
	}
}

package run

import (
	"context"
	"testing"

	"github.com/servebench/servebench/internal/stats"
	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// TestUntilOnSimulator is issue 21's precision stop, in virtual time: a
// stage bounded by 20,000 requests with until e2e_ms.p50 ±2 % ends at the
// first check where the interval of the e2e latencies it measured is
// within 2 % of the median, not at an earlier check (recomputed here from
// the records, in the order the load took them), and the summary states
// the margin reached.
func TestUntilOnSimulator(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Parse("until.yaml", []byte(`name: until
target: {url: "sim://tiny?seed=4"}
scrape: {enabled: false}
prompts: {input_tokens: {dist: uniform, min: 64, max: 512}, output_tokens: {dist: uniform, min: 8, max: 64}}
load:
  stages:
    - {name: probe, concurrency: 4, requests: 20000, warmup: {requests: 8}, until: {metric: e2e_ms.p50, margin: 2%}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := sim.ConfigFromURL(sc.SimTarget())
	if err != nil {
		t.Fatal(err)
	}
	var e2e []float64 // in the order the load took the requests' ends
	sum, err := Simulate(context.Background(), sc, cfg, func(rec results.Record, _ int) {
		if r := rec.Result; r != nil && !r.Warmup && r.Outcome == results.OK {
			d, _ := r.E2E()
			e2e = append(e2e, float64(d)/1e6)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Until) != 1 {
		t.Fatalf("until %+v", sum.Until)
	}
	u := sum.Until[0]
	// The requests in flight when the goal was reached still end and are
	// recorded, after the goal's samples: at most one per worker.
	if !u.Reached || u.Achieved > 0.02 || u.Achieved <= 0 || u.Samples > len(e2e) || len(e2e)-u.Samples > 3 || u.Samples >= 20000 {
		t.Fatalf("until %+v (%d measured requests): want the goal reached within 2 %% before the bound", u, len(e2e))
	}
	margin := func(n int) float64 {
		return stats.QuantileUnsorted(append([]float64(nil), e2e[:n]...), 0.5, 0.95).Margin()
	}
	if m := margin(u.Samples); m > 0.02 || m != u.Achieved {
		t.Errorf("margin over the %d samples %.4f, the summary says %.4f", u.Samples, m, u.Achieved)
	}
	for n := load.NextCheck(0); n < u.Samples; n = load.NextCheck(n) {
		if m := margin(n); m <= 0.02 {
			t.Errorf("at the check after %d samples the margin was already %.4f: the stage ran on to %d", n, m, u.Samples)
		}
	}
	var text []byte
	for _, f := range sum.About() {
		if f.Label == "precision" {
			text = append(text, f.Lines[0]...)
		}
	}
	if len(text) == 0 {
		t.Errorf("the summary's box has no precision line")
	}
	t.Logf("%s", text)
}

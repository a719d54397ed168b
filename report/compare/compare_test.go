package compare

import (
	"errors"
	"flag"
	"path/filepath"

	"github.com/servebench/servebench/internal/golden"
	"github.com/servebench/servebench/report"

	"github.com/servebench/servebench/results"

	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMannWhitney(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	tests := []struct {
		name  string
		x, y  []float64
		want  float64 // NaN: no test
		shift int
	}{
		// Hand-computed: ranks with ties (2,2,2 → 3; 3,3 → 5.5), R1 = 12.5,
		// U = 2.5, tie-corrected variance 11.2857, continuity 0.5.
		{"ties", []float64{1, 2, 2, 3}, []float64{2, 3, 4, 5}, 0.136658, 1},
		// Complete separation of 5 and 5: U = 0, z = 12/√(275/12).
		{"separated", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0.012186, 1},
		{"separated down", []float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}, 0.012186, -1},
		{"identical", []float64{1, 2, 3, 4, 5}, []float64{1, 2, 3, 4, 5}, 1, 0},
		{"all tied", []float64{3, 3, 3, 3}, []float64{3, 3, 3, 3}, nan, 0},
		{"too few", []float64{1, 2, 3}, []float64{4, 5, 6, 7, 8}, nan, 0},
		{"NaN ignored", []float64{1, 2, 3, 4, 5, nan}, []float64{nan, 6, 7, 8, 9, 10}, 0.012186, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, shift := mannWhitney(tc.x, tc.y)
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-5) {
				t.Errorf("p = %g, want %g", got, tc.want)
			}
			if shift != tc.shift {
				t.Errorf("shift = %d, want %d", shift, tc.shift)
			}
			if back, bshift := mannWhitney(tc.y, tc.x); !(math.IsNaN(back) && math.IsNaN(got)) && (back != got || bshift != -shift) {
				t.Errorf("not symmetric: %g %d vs %g %d", got, shift, back, bshift)
			}
		})
	}
}

func TestHolm(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	got := holm([]float64{0.01, 0.04, nan, 0.03, 0.5})
	// m = 4: 0.01·4 = 0.04; 0.03·3 = 0.09; 0.04·2 = 0.08 → 0.09 (monotone); 0.5·1.
	want := []float64{0.04, 0.09, nan, 0.09, 0.5}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || (!math.IsNaN(got[i]) && math.Abs(got[i]-want[i]) > 1e-12) {
			t.Errorf("holm = %v, want %v", got, want)
			break
		}
	}
}

// TestMannWhitneyFalsePositives checks the test's calibration: samples of
// one distribution are called different at α = 0.05 about 5 % of the time.
func TestMannWhitneyFalsePositives(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 400
	hits := 0
	for range trials {
		x, y := make([]float64, 60), make([]float64, 60)
		for i := range x {
			x[i], y[i] = rng.ExpFloat64(), rng.ExpFloat64()
		}
		if p, _ := mannWhitney(x, y); p < 0.05 {
			hits++
		}
	}
	if rate := float64(hits) / trials; rate > 0.09 || rate < 0.01 {
		t.Errorf("false-positive rate %.3f at α = 0.05", rate)
	}
}

// compareAggregate builds a two-stage run: stage "closed" with TTFT about
// ttft and per-token gaps itl, and an open stage at arrival rate rate.
func compareAggregate(t testing.TB, seed uint64, ttft, itl time.Duration, rate float64) *report.Aggregate {
	t.Helper()
	a := report.New()
	sc := `{"name":"cmp","load":{"stages":[{"name":"closed","concurrency":4},{"name":"open","rate":` +
		strconv.FormatFloat(rate, 'g', -1, 64) + `,"arrival":"poisson","max_concurrency":16}]}}`
	a.AddHeader(&results.Header{Schema: results.Schema, Tool: "servebench", Version: "test",
		Started: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), Model: "m", Scenario: json.RawMessage(sc)})
	rng := rand.New(rand.NewPCG(seed, 3))
	jitter := func(d time.Duration) time.Duration { return time.Duration(float64(d) * (0.8 + 0.4*rng.Float64())) }
	for i := range 200 {
		stage := i / 100
		var sent time.Duration
		if stage == 0 {
			sent = time.Duration(i) * 20 * msec
		} else {
			sent = 2*time.Second + time.Duration(float64(i-100)/rate*float64(time.Second))
		}
		r := okResult(uint64(i), stage, sent+msec, jitter(ttft), jitter(itl), 20+rng.IntN(20))
		r.Scheduled = sent
		a.Add(&r)
	}
	return a
}

func TestCompareGolden(t *testing.T) {
	t.Parallel()
	base := compareAggregate(t, 1, 100*msec, 10*msec, 20)
	cand := compareAggregate(t, 2, 100*msec, 15*msec, 20)
	c, err := Runs(base, cand, Options{MaxRegression: map[string]float64{
		"itl_ms.p50": 0.10, "closed:ttft_ms.p90": 0.5, "output_tokens_per_s": 0.5, "error_rate": 0,
	}})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := WriteText(&text, c); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "compare.txt", text.Bytes())
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "compare.json", append(js, '\n'))

	if c.Pass {
		t.Error("a 50 % ITL regression passed a 10 % gate")
	}
	byKey := map[string]Gate{}
	for _, g := range c.Gates {
		byKey[g.Key] = g
	}
	if g := byKey["itl_ms.p50"]; g.Pass || g.Change < 0.3 || g.P >= 0.05 {
		t.Errorf("itl gate = %+v", g)
	}
	if g := byKey["closed:ttft_ms.p90"]; !g.Pass {
		t.Errorf("ttft gate (same TTFT) = %+v", g)
	}
	if g := byKey["error_rate"]; !g.Pass {
		t.Errorf("error-rate gate (no errors) = %+v", g)
	}
}

func TestCompareSameDistribution(t *testing.T) {
	t.Parallel()
	c, err := Runs(compareAggregate(t, 1, 100*msec, 10*msec, 20), compareAggregate(t, 2, 100*msec, 10*msec, 20), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range c.Tables {
		for _, r := range tb.Rows {
			if r.Verdict != "~" {
				t.Errorf("%s %s %s: %s (change %.3f, p %.3f)", tb.Scope, r.Metric, r.Stat, r.Verdict, r.Change, r.P)
			}
		}
	}
	if len(c.Warnings) != 0 || !c.Pass {
		t.Errorf("warnings %q, pass %v", c.Warnings, c.Pass)
	}
}

func TestCompareFlagsOfferedLoad(t *testing.T) {
	t.Parallel()
	base, cand := compareAggregate(t, 1, 100*msec, 10*msec, 20), compareAggregate(t, 1, 100*msec, 10*msec, 40)
	if _, err := Runs(base, cand, Options{}); !errors.Is(err, ErrDifferentWorkloads) || !strings.Contains(err.Error(), "20 req/s") {
		t.Errorf("a different offered load compared without --different-workloads: %v", err)
	}
	c, err := Runs(base, cand, Options{DifferentWorkloads: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Workload) != 1 || !strings.Contains(c.Workload[0], "stage 1 (open)") {
		t.Errorf("workload differences %q", c.Workload)
	}
	w := strings.Join(c.Warnings, "\n")
	if !strings.Contains(w, "open: different offered loads: base open, poisson 20 req/s") ||
		!strings.Contains(w, "new open, poisson 40 req/s") {
		t.Errorf("warnings:\n%s", w)
	}
	var open *Table
	for i := range c.Tables {
		if c.Tables[i].Scope == "open" {
			open = &c.Tables[i]
		}
	}
	if open == nil || math.Abs(open.BaseLoad.ArrivalsPerSec-20) > 0.5 || math.Abs(open.NewLoad.ArrivalsPerSec-40) > 1 {
		t.Errorf("realised arrival rates: %+v", open)
	}
}

func TestParseMaxRegression(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		key   string
		limit float64
		err   string
	}{
		{"ttft_ms.p99=10%", "ttft_ms.p99", 0.10, ""},
		{"closed-8:itl_ms.p50=2.5%", "closed-8:itl_ms.p50", 0.025, ""},
		{"output_tokens_per_s=0.05", "output_tokens_per_s", 0.05, ""},
		{"error_rate=0%", "error_rate", 0, ""},
		{"ttft_ms.p98=10%", "", 0, "needs a statistic"},
		{"requests_per_s.p50=1%", "", 0, "takes no statistic"},
		{"tokens=1%", "", 0, "unknown metric"},
		{"ttft_ms.p99=ten", "", 0, "percentage"},
		{"=5%", "", 0, "want METRIC.STAT=N%"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			key, limit, err := ParseMaxRegression(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || key != tc.key || math.Abs(limit-tc.limit) > 1e-12 {
				t.Errorf("= %q, %g, %v; want %q, %g", key, limit, err, tc.key, tc.limit)
			}
		})
	}
}

// BenchmarkMannWhitney measures the test on two runs of 10,000 requests.
func BenchmarkMannWhitney(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := make([]float64, 10_000), make([]float64, 10_000)
	for i := range x {
		x[i], y[i] = rng.ExpFloat64(), rng.ExpFloat64()*1.01
	}
	for b.Loop() {
		mannWhitney(x, y)
	}
}

// FuzzParseMaxRegression: any flag value is either rejected with an error
// or yields a key that Compare accepts and a finite limit ≥ 0.
func FuzzParseMaxRegression(f *testing.F) {
	for _, s := range []string{"ttft_ms.p99=10%", "closed-8:itl_ms.p50=2.5%", "output_tokens_per_s=0.05",
		"error_rate=0%", "a:b:tpot_ms.mean=1e2%", "=", "ttft_ms.p99=NaN%", "e2e_ms.max=+Inf"} {
		f.Add(s)
	}
	base := compareAggregate(f, 1, 100*msec, 10*msec, 20)
	f.Fuzz(func(t *testing.T, s string) {
		key, limit, err := ParseMaxRegression(s)
		if err != nil {
			return
		}
		if math.IsNaN(limit) || math.IsInf(limit, 0) || limit < 0 {
			t.Fatalf("%q: limit %g", s, limit)
		}
		c, err := Runs(base, base, Options{MaxRegression: map[string]float64{key: limit}})
		if err != nil {
			t.Fatalf("%q parsed but Compare rejects %q: %v", s, key, err)
		}
		if len(c.Gates) != 1 {
			t.Fatalf("%q: %d gates", s, len(c.Gates))
		}
	})
}

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

const msec = time.Millisecond

func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), got, *update)
}

// okResult is an ok streamed request: ttft after sent, then n chunks of one
// token itl apart.
func okResult(seq uint64, stage int, sent, ttft, itl time.Duration, n int) results.Result {
	r := results.Result{Seq: seq, Stage: stage, Outcome: results.OK, API: results.APIChat,
		Stream: true, Scheduled: sent - msec, Sent: sent, Headers: sent + ttft/2, FirstToken: sent + ttft,
		FirstContent: sent + ttft, PromptTokens: 100, OutputTokens: n, InputTokens: 100, MaxTokens: n}
	for i := range n {
		r.ChunkTimes = append(r.ChunkTimes, ttft+time.Duration(i)*itl)
	}
	r.LastToken = sent + r.ChunkTimes[n-1]
	r.End = r.LastToken + msec
	return r
}

// embedAggregate is a closed-loop embeddings run: 100 requests of 8
// texts each, one every 10 ms, each taking e2e.
func embedAggregate(t testing.TB, e2e time.Duration, every time.Duration) *report.Aggregate {
	t.Helper()
	a := report.New()
	a.AddHeader(&results.Header{Schema: results.Schema, Tool: "servebench", Version: "test",
		Started: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), Model: "m",
		Scenario: json.RawMessage(`{"name":"embed","target":{"api":"embeddings"},"load":{"stages":[{"name":"embed","concurrency":4}]}}`)})
	for i := range 100 {
		sent := time.Duration(i)*every + msec
		r := results.Result{Seq: uint64(i), Outcome: results.OK, API: results.APIEmbeddings, Scheduled: sent, Sent: sent,
			Headers: sent + e2e, End: sent + e2e, Inputs: 8, InputTokens: 800, PromptTokens: 800}
		a.Add(&r)
	}
	return a
}

// TestCompareEmbeddings: two embeddings runs are compared on inputs/s and
// tokens/s as well, and a gate on inputs_per_s judges them.
func TestCompareEmbeddings(t *testing.T) {
	t.Parallel()
	base, cand := embedAggregate(t, 20*msec, 10*msec), embedAggregate(t, 40*msec, 20*msec)
	c, err := Runs(base, cand, Options{MaxRegression: map[string]float64{"inputs_per_s": 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	for _, r := range c.Tables[0].Rows {
		rows[r.Metric+"."+r.Stat] = r
	}
	in, ok := rows["inputs_per_s."]
	if !ok || in.Base < 790 || in.Base > 810 || in.New < 395 || in.New > 405 {
		t.Fatalf("inputs_per_s row %+v (present %v): want about 800 and 400 inputs/s", in, ok)
	}
	if _, ok := rows["total_tokens_per_s."]; !ok {
		t.Error("no total_tokens_per_s row")
	}
	if c.Pass || len(c.Gates) != 1 || c.Gates[0].Pass {
		t.Errorf("gates %+v: want halving inputs/s to fail a 10 %% gate", c.Gates)
	}
	// A generation run has no such rows.
	g, err := Runs(compareAggregate(t, 1, 100*msec, 10*msec, 20), compareAggregate(t, 2, 100*msec, 10*msec, 20), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Tables[0].Rows {
		if r.Metric == "inputs_per_s" {
			t.Errorf("a generation comparison has an inputs_per_s row")
		}
	}
}

// TestGateFamily: a gate's test is adjusted only among the metrics gated
// in its scope, so a metric added to the table (or shown beside it) cannot
// move an existing gate's p-value: with one gated metric, the gate's p is
// the test's own.
func TestGateFamily(t *testing.T) {
	t.Parallel()
	base := compareAggregate(t, 1, 100*msec, 10*msec, 20)
	cand := compareAggregate(t, 2, 104*msec, 10*msec, 20)
	c, err := Runs(base, cand, Options{MaxRegression: map[string]float64{"ttft_ms.p50": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := mannWhitney(base.Scope(nil).Values("ttft_ms"), cand.Scope(nil).Values("ttft_ms"))
	if raw > 0.2 || raw < 1e-9 {
		t.Fatalf("raw p %v: the fixture should give a p-value that Holm would move", raw)
	}
	if len(c.Gates) != 1 || c.Gates[0].P != raw {
		t.Fatalf("gates %+v: want the gate's p to be the test's own, %v", c.Gates, raw)
	}
	shown := 0
	for _, r := range c.Tables[0].Rows {
		if r.Stat == "p50" && r.NBase > 0 {
			shown++
		}
	}
	if shown < 3 {
		t.Errorf("%d tested metrics shown: the family of the others should be larger than the gate's", shown)
	}
}

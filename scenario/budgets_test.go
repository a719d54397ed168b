package scenario

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

const budgetsBase = `name: gate
load:
  stages:
    - {name: closed-8, concurrency: 8, requests: 100}
    - {name: open, rate: 10, requests: 100}
`

func TestBudgetsValid(t *testing.T) {
	t.Parallel()
	doc := budgetsBase + `slo: {ttft_ms: 2000, tpot_ms: 100}
budgets:
  strict: true
  overall:
    ttft_ms: {p99: 2000, p50: 500}
    itl_ms: {p99: 80}
    e2e_ms: {max: 30000, mean: 5000}
    error_rate: {max: 0.01}
    drop_rate: {max: 0}
    output_tokens_per_s: {min: 500}
    requests_per_s: {min: 1}
    goodput: {min: 0.95}
    preemptions: {max: 0}
    kv_usage: {max: 0.9}
    token_count_mismatch: {max: 0}
    min_samples: 100
  stages:
    closed-8: {ttft_ms: {p99: 1500}}
`
	sc, err := Parse("gate.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	o := sc.Budgets.Overall
	var got []string
	for _, b := range o.List() {
		for _, l := range b.Limits.List() {
			got = append(got, b.Metric+" "+l.String())
		}
	}
	want := []string{
		"ttft_ms p50 ≤ 500", "ttft_ms p99 ≤ 2000", "itl_ms p99 ≤ 80", "e2e_ms mean ≤ 5000", "e2e_ms max ≤ 30000",
		"error_rate max ≤ 0.01", "drop_rate max ≤ 0", "output_tokens_per_s min ≥ 500", "requests_per_s min ≥ 1",
		"goodput min ≥ 0.95", "preemptions max ≤ 0", "kv_usage max ≤ 0.9", "token_count_mismatch max ≤ 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("limits:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !sc.Budgets.Strict || o.MinSamples != 100 || sc.Budgets.Stages["closed-8"].Get("ttft_ms").P99 == nil {
		t.Errorf("budgets not decoded: %+v", sc.Budgets)
	}
	// The resolved scenario (the results header) carries the budgets, so
	// `bench check` can judge saved results without the scenario file.
	raw, err := sc.Resolved()
	if err != nil {
		t.Fatal(err)
	}
	back, err := results.DecodeSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.SLO == nil || back.SLO.TPOTMs != 100 || back.Budgets == nil || *back.Budgets.Overall.Get("kv_usage").Max != 0.9 ||
		*back.Budgets.Stages["closed-8"].Get("ttft_ms").P99 != 1500 || !back.Budgets.Strict {
		t.Errorf("budgets lost in the resolved JSON:\n%s", raw)
	}
}

func TestBudgetsInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want []string // each must appear in the error
	}{
		{"empty budgets", "budgets: {}\n", []string{"gate.yaml:6: budgets: sets no budget"}},
		{"empty set", "budgets: {overall: {min_samples: 3}}\n", []string{"budgets.overall: sets no budget"}},
		{"empty limits", "budgets:\n  overall:\n    ttft_ms: {}\n", []string{"gate.yaml:8: budgets.overall.ttft_ms: sets no limit (want p50, p90, p95, p99, p99_9, mean, max)"}},
		{"stat not for latency", "budgets:\n  overall:\n    ttft_ms: {min: 3}\n", []string{"budgets.overall.ttft_ms.min: does not apply to ttft_ms"}},
		{"percentile of a rate", "budgets:\n  overall:\n    output_tokens_per_s: {p50: 3}\n", []string{"output_tokens_per_s.p50: does not apply to output_tokens_per_s (want min)"}},
		{"min of an error rate", "budgets:\n  overall:\n    error_rate: {min: 0.1}\n", []string{"error_rate.min: does not apply"}},
		{"fraction above one", "budgets:\n  overall:\n    error_rate: {max: 5}\n", []string{"gate.yaml:8: budgets.overall.error_rate.max: is a fraction from 0 to 1, got 5"}},
		{"negative", "budgets:\n  overall:\n    ttft_ms: {p99: -1}\n", []string{"ttft_ms.p99: must be a number ≥ 0, got -1"}},
		{"huge latency", "budgets:\n  overall:\n    ttft_ms: {p99: 1e12}\n", []string{"want milliseconds up to"}},
		{"negative min samples", "budgets:\n  overall:\n    ttft_ms: {p99: 1}\n    min_samples: -2\n", []string{"budgets.overall.min_samples: must be ≥ 0"}},
		{"unknown stage", "budgets:\n  stages:\n    closed-9: {ttft_ms: {p99: 1}}\n", []string{`budgets.stages.closed-9: no stage is named "closed-9" (stages: closed-8, open)`}},
		{"null stage", "budgets:\n  stages:\n    closed-8:\n", []string{"budgets.stages.closed-8: sets no budget"}},
		{"goodput without slo", "budgets:\n  overall:\n    goodput: {min: 0.9}\n", []string{"budgets.overall.goodput: needs per-request objectives"}},
		{"empty slo", "slo: {}\n", []string{"gate.yaml:6: slo: sets no objective"}},
		{"negative slo", "slo: {ttft_ms: -5, tpot_ms: 10}\n", []string{"slo.ttft_ms: want milliseconds from 0 (unset)"}},
		{"mismatch without ignore_eos", "request: {ignore_eos: false}\nbudgets:\n  overall:\n    token_count_mismatch: {max: 0}\n", []string{"token_count_mismatch: needs request.ignore_eos: true"}},
		{"server budget without scrape", "scrape: {enabled: false}\nbudgets:\n  overall:\n    kv_usage: {max: 0.5}\n", []string{"budgets.overall: preemptions and kv_usage come from the server's /metrics"}},
		{"unknown budget key", "budgets:\n  overall:\n    ttft: {p99: 1}\n", []string{"gate.yaml:8: budgets.overall.ttft: unknown field"}},
		{"unknown stat", "budgets:\n  overall:\n    ttft_ms: {p98: 1}\n", []string{"gate.yaml:8: budgets.overall.ttft_ms.p98: unknown field"}},
		{"string limit", "budgets:\n  overall:\n    ttft_ms: {p99: fast}\n", []string{"gate.yaml:8: budgets.overall.ttft_ms.p99: want a number"}},
		{"unknown key in a stage", "budgets:\n  stages:\n    closed-8: {ttft_ms: {p99: 1}, itl: {p99: 2}}\n", []string{"gate.yaml:8", "itl"}},
		{"mistyped metric", "budgets:\n  overall:\n    ttft_m: {p99: 1}\n", []string{"gate.yaml:8: budgets.overall.ttft_m: unknown field (did you mean ttft_ms?)"}},
		{"metric no budget limits", "budgets:\n  overall:\n    wire_lag_ms: {p99: 1}\n", []string{"gate.yaml:8: budgets.overall.wire_lag_ms: unknown field (known: ttft_ms, "}},
		{"metric twice", "budgets:\n  overall:\n    e2e_ms: {p99: 1}\n    e2e_ms: {p50: 1}\n", []string{"gate.yaml:9: budgets.overall.e2e_ms: set twice (first at line 8)"}},
		{"unknown metric among others", "budgets:\n  overall:\n    e2e_ms: {p99: 1}\n    min_samples: 3\n    error_rat: 0.1\n", []string{"gate.yaml:10: budgets.overall.error_rat: unknown field (did you mean error_rate?)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("gate.yaml", []byte(budgetsBase+tc.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestBudgetsSet(t *testing.T) {
	t.Parallel()
	sc, err := Parse("gate.yaml", []byte(budgetsBase))
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Set("budgets.overall.ttft_ms.p99", "0.001"); err != nil {
		t.Fatal(err)
	}
	if got := *sc.Budgets.Overall.Get("ttft_ms").P99; got != 0.001 {
		t.Errorf("p99 = %g", got)
	}
	err = sc.Set("budgets.overall.error_rate.max", "2")
	if err == nil || !strings.Contains(err.Error(), "--set: budgets.overall.error_rate.max: is a fraction") {
		t.Errorf("bad --set accepted or unclear: %v", err)
	}
	// A metric the file does not budget yet, limit by limit or whole.
	if err := sc.Set("budgets.overall.e2e_ms.max", "9000"); err != nil {
		t.Fatal(err)
	}
	if err := sc.Set("budgets.stages.open.requests_per_s", "{min: 2}"); err != nil {
		t.Fatal(err)
	}
	if got := sc.Budgets.Overall.Get("e2e_ms"); got == nil || *got.Max != 9000 || *sc.Budgets.Stages["open"].Get("requests_per_s").Min != 2 {
		t.Errorf("--set of a new metric's limits: %+v, stage open %+v", got, sc.Budgets.Stages["open"])
	}
	for path, want := range map[string]string{
		"budgets.overall.ttf_ms.p99": `--set: budgets.overall.ttf_ms.p99: unknown field "ttf_ms" in budgets.overall (did you mean ttft_ms?)`,
		"budgets.overall.ttf_ms":     `--set: budgets.overall.ttf_ms: unknown field "ttf_ms" in budgets.overall (did you mean ttft_ms?)`,
	} {
		before := sc.Budgets.Overall.List()
		err := sc.Set(path, "3")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s=3: %v, want %q", path, err, want)
		}
		if !reflect.DeepEqual(sc.Budgets.Overall.List(), before) {
			t.Errorf("--set %s=3 failed and still changed the budgets", path)
		}
	}
}

// TestTableMetricAddedBudgets checks budget validation against a copy of
// the metric table with a metric appended (as sweep's
// TestTableMetricAdded does for the outputs): its limits are checked by
// its class with no other edit, a name near it is suggested, and the
// table, not a list here, decides what is known.
func TestTableMetricAddedBudgets(t *testing.T) {
	t.Parallel()
	table := append(results.Metrics(), results.Metric{Name: "decode_ms", Unit: "ms", Class: results.Latency, Budget: true,
		Observe: func(r *results.Result, dst []time.Duration) []time.Duration { return dst }, About: "first token → end"})
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name   string
		table  results.Table
		limits map[string]*results.Limits
		want   string // "" for none
	}{
		{"budgeted", table, map[string]*results.Limits{"decode_ms": {P99: f(100), Mean: f(50)}}, ""},
		{"stat of another class", table, map[string]*results.Limits{"decode_ms": {Min: f(1)}}, "budgets.overall.decode_ms.min: does not apply to decode_ms (want p50, p90, p95, p99, p99_9, mean, max)"},
		{"latency bound", table, map[string]*results.Limits{"decode_ms": {P99: f(1e12)}}, "budgets.overall.decode_ms.p99: want milliseconds up to"},
		{"mistyped", table, map[string]*results.Limits{"decode_m": {P99: f(1)}}, "budgets.overall.decode_m: unknown metric (did you mean decode_ms?)"},
		{"today's table", results.Metrics(), map[string]*results.Limits{"decode_ms": {P99: f(1)}}, "budgets.overall.decode_ms: unknown metric (known: ttft_ms, "},
		{"not budgeted", table, map[string]*results.Limits{"wire_lag_ms": {P99: f(1)}}, "budgets.overall.wire_lag_ms: is not a figure a budget may limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, err := Parse("gate.yaml", []byte(budgetsBase))
			if err != nil {
				t.Fatal(err)
			}
			sc.Budgets = &results.Budgets{Overall: &results.BudgetSet{Limits: tc.limits}}
			v := validator{src: &sc.src}
			v.budgetsIn(sc, tc.table)
			err = joinSorted(v.errs)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

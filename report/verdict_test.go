package report

import (
	"github.com/servebench/servebench/results"

	"bytes"
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/golden"

	"github.com/servebench/servebench/scenario"
)

const verdictScenario = `name: golden
request: {ignore_eos: true}
slo: {ttft_ms: 250, tpot_ms: 30}
load:
  stages:
    - {name: a, concurrency: 4, requests: 100}
    - {name: b, concurrency: 4, requests: 100}
    - {name: c, concurrency: 4, requests: 100}
budgets:
  overall:
    ttft_ms: {p50: 200, p99: 300}
    itl_ms: {p99: 20}
    e2e_ms: {max: 2000}
    error_rate: {max: 0.01}
    drop_rate: {max: 0.05}
    output_tokens_per_s: {min: 1000}
    goodput: {min: 0.5}
    preemptions: {max: 1}
    kv_usage: {max: 0.9}
    token_count_mismatch: {max: 0}
  stages:
    a: {ttft_ms: {p90: 400}, preemptions: {max: 0}, min_samples: 200}
    c: {requests_per_s: {min: 1}, preemptions: {max: 1}}
`

// verdictAggregate is records(1) with a header asking for ignore_eos and a
// scrape every 500 ms: KV usage climbs to 0.95, the preemption counter
// steps from 0 to 3, one sample fails.
func verdictAggregate(t testing.TB) *Aggregate {
	t.Helper()
	a := New()
	a.AddHeader(&results.Header{Schema: results.Schema, Tool: "servebench", Version: "test",
		Started: time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), Target: "http://127.0.0.1:8000", Model: "m",
		Scenario: json.RawMessage(`{"name":"golden","request":{"ignore_eos":true},"load":{"stages":[{"name":"a"},{"name":"b"},{"name":"c"}]}}`)})
	rs := records(1)
	rs[10].OutputTokens-- // a server that stopped one token short
	for i := range rs {
		a.Add(&rs[i])
	}
	preempt := []float64{0, 0, 0, 0, 2, 2, 2, 3, 3, 3, 3, 3}
	for i, p := range preempt {
		s := results.Sample{Index: uint64(i), At: time.Duration(i) * 500 * msec, OK: i != 6}
		if s.OK {
			s.Values = results.Values{results.KVUsage: min(0.1+0.08*float64(i), 0.95), results.Preemptions: p}
		}
		a.AddSample(s)
	}
	return a
}

func verdictBudgets(t testing.TB, doc string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse("verdict.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestVerdictGolden(t *testing.T) {
	t.Parallel()
	a := verdictAggregate(t)
	sc := verdictBudgets(t, verdictScenario)
	s := a.Summary()
	s.Verdict = a.Evaluate(s, sc.Budgets, sc.SLO)
	s.Verdict.Source = "verdict.yaml"

	var js, text, md, junit bytes.Buffer
	if err := json.NewEncoder(&js).Encode(s.Verdict); err != nil {
		t.Fatal(err)
	}
	if err := WriteVerdictText(&text, s.Verdict); err != nil {
		t.Fatal(err)
	}
	if err := WriteVerdictMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&junit, s); err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, js.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "verdict.json", indented.Bytes())
	goldenFile(t, "verdict.txt", text.Bytes())
	goldenFile(t, "verdict.md", md.Bytes())
	goldenFile(t, "verdict.junit.xml", junit.Bytes())
}

// TestVerdictFigures checks the figures that do not come straight from the
// summary, by recounting them from the records.
func TestVerdictFigures(t *testing.T) {
	t.Parallel()
	a := verdictAggregate(t)
	sc := verdictBudgets(t, verdictScenario)
	s := a.Summary()
	v := a.Evaluate(s, sc.Budgets, sc.SLO)
	checks := map[string]Check{}
	for _, c := range v.Checks {
		checks[c.Name] = c
	}

	rs := records(1)
	var finished, good float64
	for _, r := range rs {
		if r.Warmup || (r.Outcome != results.OK && r.Outcome != results.Failed) {
			continue
		}
		finished++
		ttft, _ := r.TTFT()
		tpot, ok := r.TPOT()
		if r.Outcome == results.OK && ttft <= 250*msec && (!ok || tpot <= 30*msec) {
			good++
		}
	}
	tests := []struct {
		name     string
		measured float64
		pass     bool
	}{
		{"overall.goodput.min", good / finished, good/finished >= 0.5},
		{"overall.error_rate.max", float64(s.Overall.Requests.Failed) / float64(s.Overall.Requests.OK+s.Overall.Requests.Failed), false},
		{"overall.token_count_mismatch.max", 1, false},
		{"overall.ttft_ms.p99", s.Overall.TTFT.P99, s.Overall.TTFT.P99 <= 300},
		// Preemptions: from the last scrape at or before the first send (0)
		// to the first at or after the last end: 3 in all.
		{"overall.preemptions.max", 3, false},
		// Peak KV usage among the scrapes during the load.
		{"overall.kv_usage.max", 0.95, false},
		// Stage a runs from 0 to about 3.3 s: the counter went from 0 (at
		// 0 s) to 3 (at 3.5 s).
		{"a.preemptions.max", 3, false},
		// Stage c runs from 3 s to the end: from 2 (at 2.5 s; the 3 s
		// scrape failed) to 3.
		{"c.preemptions.max", 1, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := checks[tc.name]
			if !ok {
				t.Fatalf("no check %s", tc.name)
			}
			if c.Measured == nil {
				t.Fatalf("not measured: %s", c.Note)
			}
			if d := *c.Measured - tc.measured; d > 1e-6 || d < -1e-6 {
				t.Errorf("measured %g, want %g", *c.Measured, tc.measured)
			}
			if c.Pass != tc.pass {
				t.Errorf("pass = %v, want %v (%s)", c.Pass, tc.pass, checkLine(&c))
			}
		})
	}
	if v.Pass || v.Failed == 0 {
		t.Errorf("verdict passes with failed checks: %+v", v)
	}
	// Stage a's p90 is from ~95 requests, below its min_samples of 200:
	// inconclusive, with a warning, not missed.
	if c := checks["a.ttft_ms.p90"]; c.Status != StatusInconclusive || c.MinSamples != 200 || len(v.Warnings) == 0 ||
		!strings.Contains(strings.Join(v.Warnings, "\n"), "a ttft_ms p90 from") {
		t.Errorf("too-few-samples check = %+v, warnings %q", c, v.Warnings)
	}
}

func TestVerdictCases(t *testing.T) {
	t.Parallel()
	base := `name: golden
request: {ignore_eos: true}
load:
  stages:
    - {name: a, concurrency: 4, requests: 100}
    - {name: b, concurrency: 4, requests: 100}
    - {name: c, concurrency: 4, requests: 100}
`
	tests := []struct {
		name    string
		budgets string
		pass    bool
		failed  []string // names of failing checks
		note    string   // in some failing check's note
	}{
		{"loose", "budgets: {overall: {ttft_ms: {p50: 10000, p90: 10000}, error_rate: {max: 0.5}}}\n", true, nil, ""},
		{"impossible ttft", "budgets: {overall: {ttft_ms: {p99: 0.001}}}\n", false, []string{"overall.ttft_ms.p99"}, ""},
		{"strict samples", "budgets: {strict: true, overall: {ttft_ms: {p99: 10000}}}\n", false,
			[]string{"overall.ttft_ms.p99"}, "too few samples (budgets.strict)"},
		// 275 samples: no distribution-free 95 % interval of the p99 lies
		// among them, so even a loose p99 budget cannot be told met.
		{"too few samples", "budgets: {overall: {ttft_ms: {p99: 10000}}}\n", false, []string{"overall.ttft_ms.p99"}, "too few samples"},
		{"own min_samples", "budgets: {strict: true, overall: {ttft_ms: {p99: 10000}, min_samples: 100}}\n", true, nil, ""},
		{"throughput floor", "budgets: {stages: {b: {output_tokens_per_s: {min: 1e6}}}}\n", false, []string{"b.output_tokens_per_s.min"}, ""},
		{"no server data", "budgets: {overall: {kv_usage: {max: 1}}}\n", false, []string{"overall.kv_usage.max"}, "no /metrics page was scraped"},
		// Issue 9: scrapes of a server without the series say so.
		{"series not exported", "budgets: {overall: {kv_usage: {max: 1}, preemptions: {max: 0}}}\n", false,
			[]string{"overall.preemptions.max", "overall.kv_usage.max"}, `the server does not export a KV-cache usage gauge (metrics profile "llamacpp")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := verdictBudgets(t, base+tc.budgets)
			a := New()
			a.AddHeader(&results.Header{Schema: results.Schema,
				Scenario: json.RawMessage(`{"name":"golden","request":{"ignore_eos":true},"load":{"stages":[{"name":"a"},{"name":"b"},{"name":"c"}]}}`)})
			rs := records(1)
			for i := range rs {
				a.Add(&rs[i])
			}
			if tc.name == "series not exported" {
				for i := range 10 {
					a.AddSample(results.Sample{Index: uint64(i), At: time.Duration(i) * time.Second, OK: true,
						Reading: results.Reading{Profile: "llamacpp", Snapshot: results.Snapshot{Values: results.Values{results.Running: 2}}}})
				}
			}
			s := a.Summary()
			v := a.Evaluate(s, sc.Budgets, sc.SLO)
			if v.Pass != tc.pass {
				t.Errorf("pass = %v, want %v:\n%s", v.Pass, tc.pass, verdictText(t, v))
			}
			var failed []string
			notes := ""
			for _, c := range v.Checks {
				if !c.Pass {
					failed = append(failed, c.Name)
					notes += c.Note + "\n"
				}
			}
			if strings.Join(failed, ",") != strings.Join(tc.failed, ",") {
				t.Errorf("failed = %v, want %v", failed, tc.failed)
			}
			if !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q lack %q", notes, tc.note)
			}
		})
	}
}

func TestVerdictMissingStage(t *testing.T) {
	t.Parallel()
	sc := verdictBudgets(t, `name: x
load:
  stages: [{name: elsewhere, concurrency: 1, requests: 1}]
budgets: {stages: {elsewhere: {ttft_ms: {p50: 1}}}}
`)
	a := verdictAggregate(t)
	s := a.Summary()
	v := a.Evaluate(s, sc.Budgets, sc.SLO)
	if v.Pass || len(v.Checks) != 1 || v.Checks[0].Measured != nil || !strings.Contains(v.Checks[0].Note, "no stage of this name") {
		t.Errorf("a budget on a stage the results lack must fail unmeasured: %+v", v.Checks)
	}
}

func TestVerdictNoBudgets(t *testing.T) {
	t.Parallel()
	a := verdictAggregate(t)
	if v := a.Evaluate(a.Summary(), nil, nil); !v.Pass || len(v.Checks) != 0 {
		t.Errorf("no budgets: %+v", v)
	}
}

func TestJUnitParses(t *testing.T) {
	t.Parallel()
	a := verdictAggregate(t)
	sc := verdictBudgets(t, verdictScenario)
	s := a.Summary()
	s.Verdict = a.Evaluate(s, sc.Budgets, sc.SLO)
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Class   string `xml:"classname,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("junit does not parse: %v\n%s", err, buf.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("suites = %d", len(doc.Suites))
	}
	su := doc.Suites[0]
	failures := 0
	for _, c := range su.Cases {
		if c.Failure != nil {
			failures++
			if c.Failure.Message == "" {
				t.Errorf("case %s fails without a message", c.Name)
			}
		}
	}
	// An inconclusive check fails in JUnit too (type inconclusive): a
	// release gate must not pass on a figure it cannot tell.
	if want := s.Verdict.Failed + s.Verdict.Inconclusive; su.Tests != len(s.Verdict.Checks) || su.Failures != want || failures != want {
		t.Errorf("tests %d failures %d (counted %d), verdict has %d checks %d failed %d inconclusive", su.Tests, su.Failures, failures,
			len(s.Verdict.Checks), s.Verdict.Failed, s.Verdict.Inconclusive)
	}
	if err := WriteJUnit(&buf, &Summary{}); err == nil {
		t.Error("junit without a verdict accepted")
	}
}

func verdictText(t *testing.T, v *Verdict) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteVerdictText(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name+".golden"), got, *update)
}

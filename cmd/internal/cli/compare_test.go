package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/servebench/servebench/sim"
)

// compareScenario is a closed loop that keeps the tiny simulator's batch
// full for about a second: 48 requests of 24 to 32 output tokens, with
// contexts that fit the tiny KV cache (no preemption). The first batch is
// warmup: its eight prompts arrive at once, and the process is cold.
const compareScenario = `name: compare
target: {url: sim://tiny, model: tiny}
prompts:
  seed: 7
  input_tokens: {dist: uniform, min: 128, max: 256}
  output_tokens: {dist: uniform, min: 24, max: 32}
scrape: {enabled: false}
load:
  stages:
    - {name: closed-8, concurrency: 8, requests: 48, warmup: {requests: 8}}
`

// compareRuns makes three saved simulator runs in virtual time, so that
// no machine's load moves their figures: two of one setting (the second
// with another seed, so its step-time jitter differs) and one whose
// per-token decode cost (per_kv_token_ns, the step cost per token of
// context) is doubled. Every prompt is prefilled in one step
// (max_num_batched_tokens 2048), so that TTFT does not depend on which
// step a request happens to land in.
func compareRuns(t *testing.T) (base, same, slow string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "compare.yaml")
	if err := os.WriteFile(file, []byte(compareScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []struct{ name, target string }{
		{"base", "sim://tiny?seed=3&max_num_batched_tokens=2048&per_kv_token_ns=3200"}, // tiny.yaml: 800
		{"same", "sim://tiny?seed=4&max_num_batched_tokens=2048&per_kv_token_ns=3200"},
		{"slow", "sim://tiny?seed=3&max_num_batched_tokens=2048&per_kv_token_ns=6400"},
	}
	errs := make([]string, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			e, _, errb := testEnv()
			out := filepath.Join(dir, r.name)
			if err := bench(context.Background(), e, []string{"run", file, "--target", r.target, "--out", out, "--quiet", "--virtual"}); err != nil {
				errs[i] = fmt.Sprintf("%s: %v\n%s", r.name, err, errb)
			}
		})
	}
	wg.Wait()
	for _, msg := range errs {
		if msg != "" {
			t.Fatal(msg)
		}
	}
	base, same, slow = filepath.Join(dir, "base"), filepath.Join(dir, "same"), filepath.Join(dir, "slow")
	skipIfClientLimited(t, base, same, slow)
	return base, same, slow
}

// skipIfClientLimited skips a timing test when any of the runs in dirs
// judged itself limited by its own client (the harness verdict in its
// summary.json): on a machine that did not give the process the CPU in
// time, chunks are read late and in bursts, and latencies measure the
// machine, not the setting.
func skipIfClientLimited(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Harness *struct {
				Limited bool   `json:"limited"`
				Reason  string `json:"reason"`
			} `json:"harness"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if s.Harness != nil && s.Harness.Limited {
			t.Skipf("the machine could not keep the schedule, timings not judged: run %s was limited by the client: %s", filepath.Base(d), s.Harness.Reason)
		}
	}
}

type comparisonJSON struct {
	Tables []struct {
		Scope string `json:"scope"`
		Rows  []struct {
			Metric      string   `json:"metric"`
			Stat        string   `json:"stat"`
			Change      *float64 `json:"change"`
			P           *float64 `json:"p"`
			Significant bool     `json:"significant"`
			Verdict     string   `json:"verdict"`
		} `json:"rows"`
	} `json:"tables"`
	Pass     bool     `json:"pass"`
	Warnings []string `json:"warnings"`
}

func compareJSON(t *testing.T, args ...string) (comparisonJSON, int) {
	t.Helper()
	e, out, errb := testEnv()
	err := bench(context.Background(), e, append([]string{"compare", "--format", "json"}, args...))
	var c comparisonJSON
	if jerr := json.Unmarshal(out.Bytes(), &c); jerr != nil {
		t.Fatalf("compare %v: %v (err %v)\n%s%s", args, jerr, err, out, errb)
	}
	return c, exitCode(err)
}

// TestCompareFlagsDecodeRegression is the acceptance test of bench
// compare: a doubled decode cost is an ITL regression, significant; two
// runs of the same setting are not flagged; --max-regression gates both
// ways.
func TestCompareFlagsDecodeRegression(t *testing.T) {
	t.Parallel()
	base, same, slow := compareRuns(t)

	c, code := compareJSON(t, base, slow)
	if code != exitOK {
		t.Errorf("compare without gates: exit %d", code)
	}
	found := false
	for _, r := range c.Tables[0].Rows {
		if r.Metric == "itl_ms" && r.Stat == "p50" {
			found = true
			if !r.Significant || r.Verdict != "regression" || r.Change == nil || *r.Change < 0.2 {
				t.Errorf("doubled decode cost: itl_ms p50 row = %+v (change %v, p %v), want a significant regression\n%s",
					r, deref(r.Change), deref(r.P), compareText(t, base, slow))
			}
		}
	}
	if !found {
		t.Fatalf("no itl_ms p50 row: %+v", c.Tables[0].Rows)
	}

	c, _ = compareJSON(t, base, same)
	for _, tb := range c.Tables {
		for _, r := range tb.Rows {
			if r.Verdict != "~" && r.Verdict != "" {
				t.Errorf("same setting: %s %s %s flagged %s (change %v, p %v)\n%s", tb.Scope, r.Metric, r.Stat, r.Verdict,
					deref(r.Change), deref(r.P), compareText(t, base, same))
			}
		}
	}
	if len(c.Warnings) != 0 {
		t.Errorf("same setting: warnings %q", c.Warnings)
	}

	gate := []string{"--max-regression", "itl_ms.p50=10%", "--max-regression", "closed-8:ttft_ms.p99=1000%"}
	if _, code := compareJSON(t, append(gate, base, slow)...); code != exitBudget {
		t.Errorf("gate on the regression: exit %d, want %d\n%s", code, exitBudget, compareText(t, append(gate, base, slow)...))
	}
	if _, code := compareJSON(t, append(gate, base, same)...); code != exitOK {
		t.Errorf("gate on the same setting: exit %d, want %d\n%s", code, exitOK, compareText(t, append(gate, base, same)...))
	}

	// The text table, benchstat-style.
	e, out, _ := testEnv()
	if err := bench(context.Background(), e, []string{"compare", base, slow}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"itl_ms p50", "regression", "Mann-Whitney", "load: base closed, concurrency 8"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

// compareText returns bench compare's text output, for failure messages.
func compareText(t *testing.T, args ...string) string {
	t.Helper()
	e, out, errb := testEnv()
	err := bench(context.Background(), e, append([]string{"compare"}, args...))
	return fmt.Sprintf("%s%s(err %v)", out, errb, err)
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestCompareUsage(t *testing.T) {
	t.Parallel()
	tests := []cliCase{
		{"one run", []string{"compare", "a"}, exitUsage, "want BASE and NEW"},
		{"bad gate metric", []string{"compare", "a", "b", "--max-regression", "ttft.p99=10%"}, exitUsage, `unknown metric "ttft"`},
		{"gate without stat", []string{"compare", "a", "b", "--max-regression", "ttft_ms=10%"}, exitUsage, "needs a statistic"},
		{"gate without value", []string{"compare", "a", "b", "--max-regression", "ttft_ms.p99"}, exitUsage, "want METRIC.STAT=N%"},
		{"gate negative", []string{"compare", "a", "b", "--max-regression", "ttft_ms.p99=-3%"}, exitUsage, "percentage ≥ 0"},
		{"bad alpha", []string{"compare", "a", "b", "--alpha", "2"}, exitUsage, "--alpha"},
		{"bad format", []string{"compare", "a", "b", "--format", "csv"}, exitUsage, "--format"},
		{"missing files", []string{"compare", "/nonexistent/a", "/nonexistent/b"}, exitFailed, "base"},
		{"help", []string{"help", "compare"}, exitOK, "Mann-Whitney"},
	}
	for _, tc := range tests {
		checkCLI(t, tc)
	}
}

// TestComparePrefixCacheWarns is issue 9's cache trap: two runs of one
// scenario against one long-lived server, the second finding its prompts
// in the prefix cache, compare as a TTFT improvement. compare warns when
// the runs' cached shares differ; a salt per run (salt: random) removes
// the cause, and the warning.
func TestComparePrefixCacheWarns(t *testing.T) {
	t.Parallel()
	cfg, err := sim.ConfigFromURL("sim://tiny?enable_prompt_tokens_details=true&seed=2")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Listen(context.Background(), "127.0.0.1:0", cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "cache.yaml")
	doc := fmt.Sprintf("name: cache\ntarget: {url: %q, model: tiny}\nprompts: {input_tokens: 160, output_tokens: 4}\n"+
		"scrape: {enabled: false}\nload: {stages: [{concurrency: 1, requests: 8}]}\n", srv.URL())
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	runTwice := func(name string, extra ...string) (string, string) {
		var outs [2]string
		for i := range outs {
			outs[i] = filepath.Join(dir, fmt.Sprintf("%s-%d", name, i))
			e, _, errb := testEnv()
			if err := bench(context.Background(), e, append([]string{"run", file, "--out", outs[i], "--quiet"}, extra...)); err != nil {
				t.Fatalf("%s run %d: %v\n%s", name, i, err, errb)
			}
		}
		return outs[0], outs[1]
	}
	warnings := func(a, b string) string {
		c, _ := compareJSON(t, a, b)
		return strings.Join(c.Warnings, "\n")
	}
	if w := warnings(runTwice("same")); !strings.Contains(w, "the prefix cache served") {
		t.Errorf("no cache warning for a second run of the same prompts:\n%s", w)
	}
	if w := warnings(runTwice("salted", "--set", "prompts.salt=random")); strings.Contains(w, "prefix cache") {
		t.Errorf("salted runs warned:\n%s", w)
	}
}

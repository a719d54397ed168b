package run

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// runSim parses doc and runs it with Run into a temporary directory,
// returning the summary and the request records.
func runSim(t *testing.T, doc string) (*report.Summary, []results.Result) {
	t.Helper()
	return runSimWith(t, doc, Options{})
}

// runSimWith is runSim with opts (its Dir is set here).
func runSimWith(t *testing.T, doc string, opts Options) (*report.Summary, []results.Result) {
	t.Helper()
	sc, err := scenario.Parse("workload.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts.Dir = dir
	sum, err := Run(context.Background(), sc, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err := results.Open(filepath.Join(dir, FileResults))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []results.Result
	for r.Scan() {
		if res := r.Record().Result; res != nil {
			recs = append(recs, *res)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return sum, recs
}

// TestReasoningPreset checks that the deepseek-r1-32b preset thinks before
// it answers: its chat responses stream reasoning first, so the time to
// first token (reasoning) and the time to first content differ by about
// reasoning_tokens steps. The step overhead is lowered to keep the test
// short; the preset's own reasoning_tokens is kept.
func TestReasoningPreset(t *testing.T) {
	t.Parallel()
	cfg, err := sim.Preset("deepseek-r1-32b")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ReasoningTokens < 16 {
		t.Fatalf("deepseek-r1-32b reasons for %d tokens: want a visible reasoning phase", cfg.ReasoningTokens)
	}
	const doc = `name: reasoning
target: {url: "sim://deepseek-r1-32b?step_overhead_us=2000"}
scrape: {enabled: false}
prompts: {input_tokens: 64, output_tokens: 80}
load: {stages: [{concurrency: 2, requests: 4}]}
`
	// Over HTTP: the reasoning streams first in every response.
	sum, recs := runSim(t, doc)
	if o := sum.Overall; o.Requests.OK != 4 {
		t.Fatalf("requests %+v", o.Requests)
	}
	for _, r := range recs {
		if r.FirstContent <= r.FirstToken {
			t.Errorf("request %d: first content %v not after first token %v", r.Seq, r.FirstContent, r.FirstToken)
		}
	}
	// In virtual time, where no machine delays a timestamp: each
	// reasoning token after the first is one engine step of at least the
	// overhead, in every request.
	_, recs = runSimWith(t, doc, Options{Virtual: true})
	minGap := time.Duration(cfg.ReasoningTokens-1) * 2 * time.Millisecond
	for _, r := range recs {
		if r.FirstContent-r.FirstToken < minGap {
			t.Errorf("virtual request %d: first content %v after the first token: want at least %v (%d reasoning steps)",
				r.Seq, r.FirstContent-r.FirstToken, minGap, cfg.ReasoningTokens)
		}
	}
}

// TestToolCallsOnSim sends chat requests carrying tools with tool_choice
// required to the simulator, which answers each with a streamed tool call:
// every request has its TTFT (the call's first delta), its ITL (the
// argument pieces) and finish_reason tool_calls.
func TestToolCallsOnSim(t *testing.T) {
	t.Parallel()
	sum, recs := runSim(t, `name: tools
target: {url: "sim://tiny"}
scrape: {enabled: false}
request:
  extra: {tool_choice: required}
  tools: [{type: function, function: {name: get_weather, parameters: {type: object}}}]
prompts: {input_tokens: 32, output_tokens: 12}
load: {stages: [{concurrency: 2, requests: 6}]}
`)
	if sum.Overall.Requests.OK != 6 || sum.Overall.TTFT.Count != 6 || sum.Overall.ITL.Count != 6*11 {
		t.Fatalf("requests %+v, TTFT count %d, ITL count %d: want 6 requests with a TTFT and 11 ITLs each",
			sum.Overall.Requests, sum.Overall.TTFT.Count, sum.Overall.ITL.Count)
	}
	for _, r := range recs {
		if r.FinishReason != "tool_calls" || len(r.ChunkTimes) != 12 {
			t.Errorf("request %d: finish %q, %d token chunks", r.Seq, r.FinishReason, len(r.ChunkTimes))
		}
	}
}

// TestEmbeddingsOnSim is issue 10's embeddings check: a closed loop of
// batched embeddings requests against the simulator's /v1/embeddings.
// Every record counts its inputs and prompt tokens, the summary reports
// inputs/s and tokens/s with E2E latencies (no TTFT: nothing streams), and
// budgets that apply (e2e_ms, inputs_per_s) are judged.
func TestEmbeddingsOnSim(t *testing.T) {
	t.Parallel()
	sum, recs := runSim(t, `name: embeddings
target: {url: "sim://tiny", api: embeddings}
scrape: {enabled: false}
request: {batch: 4}
prompts: {input_tokens: 100}
load: {stages: [{concurrency: 3, requests: 12}]}
budgets:
  overall:
    e2e_ms: {max: 60000}
    inputs_per_s: {min: 1}
    total_tokens_per_s: {min: 100}
`)
	o := sum.Overall
	if o.Requests.OK != 12 || o.Requests.Inputs != 48 {
		t.Fatalf("requests %+v: want 12 ok embedding 48 texts", o.Requests)
	}
	if o.E2E.Count != 12 || o.TTFT.Count != 0 || o.ITL.Count != 0 {
		t.Errorf("E2E count %d, TTFT count %d, ITL count %d: want E2E only", o.E2E.Count, o.TTFT.Count, o.ITL.Count)
	}
	if o.Tokens.Prompt != 12*4*100 || o.Tokens.Output != 0 {
		t.Errorf("tokens %+v: want 4,800 prompt tokens (4 texts of 100 per request), none output", o.Tokens)
	}
	// The rates share one window: inputs/s is 4 per ok request, tok/s 100
	// per input.
	if o.InputsPerSec <= 0 || math.Abs(o.InputsPerSec-4*o.RequestsPerSec) > 0.01*o.InputsPerSec ||
		math.Abs(o.TotalTokensPerSec-100*o.InputsPerSec) > 0.01*o.TotalTokensPerSec {
		t.Errorf("req/s %.2f, inputs/s %.2f, tok/s %.1f: want inputs/s = 4 × req/s and tok/s = 100 × inputs/s",
			o.RequestsPerSec, o.InputsPerSec, o.TotalTokensPerSec)
	}
	if sum.Verdict == nil || !sum.Verdict.Pass || len(sum.Verdict.Checks) != 3 {
		t.Errorf("verdict %+v: want the three budgets judged and met", sum.Verdict)
	}
	for _, r := range recs {
		if r.API != results.APIEmbeddings || r.Stream || r.Inputs != 4 || r.InputTokens != 400 || r.PromptTokens != 400 || r.MaxTokens != 0 {
			t.Errorf("record %+v", r)
			break
		}
	}
	var text strings.Builder
	if err := report.WriteText(&text, sum); err != nil {
		t.Fatal(err)
	}
	// The table's header (the warnings of a loaded machine may name TTFT).
	header := ""
	for line := range strings.Lines(text.String()) {
		if strings.Contains(line, "stage") && strings.Contains(line, "req/s") {
			header = line
			break
		}
	}
	if !strings.Contains(header, "inputs/s") || strings.Contains(header, "TTFT") {
		t.Errorf("the table of an embeddings run has no inputs/s or has TTFT:\n%s", text.String())
	}
}

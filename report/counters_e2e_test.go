package report_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/slotserver"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// TestIssue20CounterGranularity is issue 20's seventh case: llm-d's
// inference simulator exports vLLM's names but, like llama.cpp, adds a
// request's tokens to its generation counter only when the request ends.
// Whether a counter moves per token or per request is told from the
// series (the counter's steps against the tokens received and the
// requests ending), not from the profile's name: a vLLM-named page with
// counters at the end is read as such, and a llama.cpp-named page whose
// counter moves per token is drawn per window.
func TestIssue20CounterGranularity(t *testing.T) {
	if testing.Short() || e2eRace {
		t.Skip("two 5-second runs")
	}
	t.Parallel()
	for _, tc := range []struct {
		name    string
		metrics string
		atEnd   bool
	}{
		{"vLLM names, counted at the end (llm-d)", "vllm", true},
		{"llama.cpp names, counted per token", "llamacpp", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := slotserver.Start(t, slotserver.Config{Slots: 4, StepOverhead: 25 * time.Millisecond, Metrics: tc.metrics, CountersAtEnd: tc.atEnd})
			// Requests of 1 to 2.5 s against 250 ms scrapes: a counter moved
			// at their ends lags the tokens by whole windows.
			doc := fmt.Sprintf(`name: counters
target: {url: %q, model: m, api: completions}
request: {ignore_eos: true}
prompts: {seed: 2, input_tokens: 16, output_tokens: {dist: uniform, min: 40, max: 100}}
scrape: {interval: 250ms}
load: {stages: [{concurrency: 4, requests: 10}]}
`, srv.URL)
			sc, err := scenario.Parse("counters.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			sum, err := run.Run(context.Background(), sc, run.Options{Dir: t.TempDir(), NoPlots: true})
			if err != nil {
				t.Fatal(err)
			}
			c := sum.Correlation
			if c.CountersAtEnd != tc.atEnd {
				t.Errorf("counters at end = %v, want %v (profile %s)", c.CountersAtEnd, tc.atEnd, c.Profile)
			}
			said := strings.Contains(strings.Join(c.Findings, "\n"), "The server counts a request's tokens when the request ends")
			if said != tc.atEnd {
				t.Errorf("findings say counters at end: %v, want %v", said, tc.atEnd)
			}
		})
	}
}

package report_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// TestOneRequestRun runs one request on one worker, in virtual time, and
// reads every text the run writes: none may say "1 requests", and a run
// from flags alone is titled by its load, not "flags".
func TestOneRequestRun(t *testing.T) {
	t.Parallel()
	s := oneRequestSummary(t)
	var b bytes.Buffer
	if err := report.WriteText(&b, s); err != nil {
		t.Fatal(err)
	}
	if err := (report.Text{Verbose: true}).Write(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if m := report.OnePlural.FindString(line); m != "" {
			t.Errorf("%q says %q", line, m)
		}
	}
	want := "tiny · closed loop, 1 worker; 1 request"
	if got := s.Title(); got != want {
		t.Errorf("Title() = %q, want %q", got, want)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); first != "servebench · "+want {
		t.Errorf("the terminal summary opens %q, want the load as its title", first)
	}
}

// oneRequestSummary runs `bench run --target sim://tiny --concurrency 1
// --requests 1` in virtual time, with budgets, and returns its summary.
func oneRequestSummary(t *testing.T) *report.Summary {
	t.Helper()
	sc, err := scenario.FromFlags(scenario.Flags{Target: "sim://tiny", Concurrency: 1, Requests: 1, InputTokens: 16, OutputTokens: 8},
		"budgets.overall.requests_per_s.min=1", "budgets.overall.ttft_ms.p99=1000")
	if err != nil {
		t.Fatal(err)
	}
	s, err := run.Run(context.Background(), sc, run.Options{Dir: t.TempDir(), NoPlots: true, Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

package report

import (
	"math"
	"strings"
	"testing"

	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/results"
)

func TestConclusion(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	stage := func(i int, name, verdict string, kv, running, pre *float64) correlate.StageCorrelation {
		return correlate.StageCorrelation{Index: i, Name: name, Verdict: verdict, KVUsageMax: kv, RunningMax: running,
			Preemptions: pre, WaitingStart: f(2), WaitingEnd: f(14), End: &correlate.Point{TokensPerSec: 1932}}
	}
	tests := []struct {
		name    string
		c       *correlate.Correlation
		h       *results.Harness
		want    []string // each must appear
		skipped int
	}{
		{"batch-size cap", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "closed-8", correlate.VerdictNotSaturated, f(70), f(8), f(0)),
			stage(1, "open-30rps", correlate.VerdictSaturated, f(77), f(8), f(0))}}, nil,
			[]string{`Saturated in stage "open-30rps" (not in "closed-8")`, "waiting 2 → 14", "near 1,932 tok/s",
				"the limit is the batch size, not memory: at most 8 requests ran at once with the KV cache at most 77 % full"}, 1},
		{"KV cache", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictSaturated, f(97.5), f(30), f(12)), stage(1, "b", correlate.VerdictSaturated, f(99), f(31), nil)}}, nil,
			[]string{`Saturated in stages "a" and "b":`, "the limit is the KV cache (usage up to 98 %, 12 preemptions)"}, 0},
		{"no KV metric", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictSaturated, nil, f(4), nil)}}, nil,
			[]string{"at most 4 requests ran at once, and with no KV-cache usage exported, memory cannot be told from a batch-size cap"}, 0},
		{"queueing", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			{Index: 0, Name: "a", Verdict: correlate.VerdictQueueing, VerdictReason: "up to 3 requests waited, but the queue did not grow", KVUsageMax: f(91)}}}, nil,
			[]string{`Near capacity but not saturated in stage "a": up to 3 requests waited, but the queue did not grow; the limit is the KV cache (usage up to 91 %)`}, 0},
		{"not saturated", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictNotSaturated, f(12), f(2), nil), stage(1, "b", correlate.VerdictNotSaturated, f(40), f(4), nil)}}, nil,
			[]string{"Not saturated: in no stage did requests queue for long and KV-cache usage stayed at or below 40 %: the server had capacity to spare"}, -1},
		{"partly judged", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictNotSaturated, f(12), f(2), nil), {Index: 1, Name: "b", Verdict: correlate.VerdictUnknown}}}, nil,
			[]string{`Not saturated where it could be judged: in no stage did requests queue for long (stage "b" had no waiting-requests count scraped) and KV-cache usage stayed at or below 12 %`}, -1},
		{"no scrapes", &correlate.Correlation{Stages: []correlate.StageCorrelation{{Name: "a", Verdict: correlate.VerdictUnknown}}}, nil,
			[]string{"Whether the server saturated cannot be told: no /metrics page was scraped"}, -1},
		{"no waiting metric", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{{Name: "a", Verdict: correlate.VerdictUnknown}}}, nil,
			[]string{"the server exports no waiting-requests count"}, -1},
		{"client limited", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictSaturated, f(99), f(8), nil)}}, &results.Harness{Limited: true, Reason: "the client used 97 % of 2 cores"},
			[]string{"The client, not the server, limited this run (the client used 97 % of 2 cores)"}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, skipped := conclusion(tc.c, tc.h)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("conclusion %q lacks %q", got, w)
				}
			}
			if skipped != tc.skipped {
				t.Errorf("stage stated = %d, want %d", skipped, tc.skipped)
			}
		})
	}
	if got, _ := conclusion(nil, nil); got != "" {
		t.Errorf("conclusion of nothing = %q", got)
	}
}

// TestConclusionFirst checks, on the preemption fixture, that the findings
// open with the conclusion and do not repeat its stage's verdict.
func TestConclusionFirst(t *testing.T) {
	t.Parallel()
	a, err := FromFiles("testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	c := a.Summary().Correlation
	if c.Conclusion == "" || c.Findings[0] != c.Conclusion {
		t.Fatalf("findings do not open with the conclusion %q: %q", c.Conclusion, c.Findings)
	}
	if !strings.Contains(c.Conclusion, `stage "overflows"`) || !strings.Contains(c.Conclusion, "KV cache") {
		t.Errorf("conclusion %q", c.Conclusion)
	}
	for _, f := range c.Findings[1:] {
		if strings.HasPrefix(f, `Stage "overflows" is queueing`) {
			t.Errorf("the stage's verdict is stated twice: %q", f)
		}
	}
}

// TestVerdictReasonEmbeddings: a queue that grew in an embeddings run is
// not blamed on output tok/s, which embeddings do not have; a generation
// run's reason still names it.
func TestVerdictReasonEmbeddings(t *testing.T) {
	start, end := 86.0, 94.4
	sc := &correlate.StageCorrelation{Verdict: correlate.VerdictQueueing, WaitingStart: &start, WaitingEnd: &end, WaitingMax: &end,
		ThroughputChange: math.NaN()}
	if got := verdictReason(sc, true); strings.Contains(got, "output tok/s") || !strings.Contains(got, "embeddings return no tokens") {
		t.Errorf("embeddings: %q", got)
	}
	if got := verdictReason(sc, false); !strings.Contains(got, "but output tok/s was not flat") {
		t.Errorf("generation: %q", got)
	}
}

package report

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/report/correlate"
	"github.com/servebench/servebench/results"
)

func TestConclusion(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	stage := func(i int, name, verdict string, kv, running, pre *float64) correlate.StageCorrelation {
		return correlate.StageCorrelation{Index: i, Name: name, Verdict: verdict, VerdictReason: "reason of " + name, KVUsageMax: kv,
			RunningMax: running, Preemptions: pre, WaitingStart: f(2), WaitingEnd: f(14), End: &correlate.Point{TokensPerSec: 1932},
			Load: &correlate.Load{InFlightMean: float64(i + 1)}}
	}
	tests := []struct {
		name   string
		c      *correlate.Correlation
		h      *results.Harness
		want   []string // each must appear
		stated []int
	}{
		{"batch-size cap", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "closed-8", correlate.VerdictNotSaturated, f(70), f(8), f(0)),
			stage(1, "open-30rps", correlate.VerdictSaturated, f(77), f(8), f(0))}}, nil,
			[]string{`Saturated in stage "open-30rps": reason of open-30rps;`,
				"the limit is the batch size, not memory: at most 8 requests ran at once with the KV cache at most 77 % full"}, []int{1}},
		{"KV cache", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictSaturated, f(97.5), f(30), f(12)), stage(1, "b", correlate.VerdictSaturated, f(99), f(31), nil)}}, nil,
			[]string{`Saturated in stage "b" (and in stage "a", below): reason of b;`, "the limit is the KV cache (usage up to 99 %)"}, []int{1}},
		{"no KV metric", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictSaturated, nil, f(4), nil)}}, nil,
			[]string{"at most 4 requests ran at once, and with no KV-cache usage exported, memory cannot be told from a batch-size cap"}, []int{0}},
		{"KV gauge read 0 while running", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			func() correlate.StageCorrelation {
				st := stage(0, "a", correlate.VerdictSaturated, nil, f(4), nil)
				st.KVZeroOnly = true
				return st
			}()}}, nil,
			[]string{"at most 4 requests ran at once, and the server's KV-cache usage read 0 % throughout while they ran",
				"memory cannot be told from a batch-size cap"}, []int{0}},
		{"queueing", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			{Index: 0, Name: "a", Verdict: correlate.VerdictQueueing, VerdictReason: "up to 3 requests waited", KVUsageMax: f(91)}}}, nil,
			[]string{`Near capacity but not shown saturated in stage "a": up to 3 requests waited; the limit is the KV cache (usage up to 91 %)`}, []int{0}},
		{"not saturated", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictNotSaturated, f(12), f(2), nil), stage(1, "b", correlate.VerdictNotSaturated, f(40), f(4), nil)}}, nil,
			[]string{`Not saturated: in stage "a" reason of a and in stage "b" reason of b; KV-cache usage stayed at or below 40 %: the server had capacity to spare`}, []int{0, 1}},
		{"partly judged", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictNotSaturated, f(12), f(2), nil), {Index: 1, Name: "b", Verdict: correlate.VerdictUnknown}}}, nil,
			[]string{`Not saturated: in stage "a" reason of a (stage "b" could not be judged: see below); KV-cache usage stayed at or below 12 %`}, []int{0}},
		{"nothing succeeded", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			{Index: 0, Name: "a", Verdict: correlate.VerdictInsufficient, VerdictReason: "not enough successful requests to judge (0 of 6 sent succeeded; a verdict needs 10)"}}}, nil,
			[]string{`No verdict: no stage had enough successful requests to judge whether the server saturated (stage "a": not enough successful requests to judge (0 of 6`}, []int{0}},
		{"no scrapes", &correlate.Correlation{Stages: []correlate.StageCorrelation{{Name: "a", Verdict: correlate.VerdictUnknown}}}, nil,
			[]string{"Whether the server saturated cannot be told: no /metrics page was scraped"}, []int{0}},
		{"no waiting metric", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{{Name: "a", Verdict: correlate.VerdictUnknown}}}, nil,
			[]string{"the server exports no waiting-requests count"}, []int{0}},
		{"nothing succeeded on a limited client", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			{Index: 0, Name: "a", Verdict: correlate.VerdictInsufficient, VerdictReason: "0 of 6 sent succeeded"}}},
			&results.Harness{Limited: true, Reason: "the client used 97 % of 2 cores"},
			[]string{`No verdict: no stage had enough successful requests`, ` The client was also limited (the client used 97 % of 2 cores).`}, []int{0}},
		{"client limited", &correlate.Correlation{Aligned: true, Stages: []correlate.StageCorrelation{
			stage(0, "a", correlate.VerdictSaturated, f(99), f(8), nil)}}, &results.Harness{Limited: true, Reason: "the client used 97 % of 2 cores"},
			[]string{"The client, not the server, limited this run (the client used 97 % of 2 cores)"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, stated := conclusion(tc.c, tc.h)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("conclusion %q lacks %q", got, w)
				}
			}
			if want := slices.Collect(maps.Keys(stated)); len(want) != len(tc.stated) || !slices.Equal(slices.Sorted(maps.Keys(stated)), tc.stated) {
				t.Errorf("stages stated = %v, want %v", slices.Sorted(maps.Keys(stated)), tc.stated)
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
	sc := &correlate.StageCorrelation{Trend: correlate.VerdictQueueing, WaitingStart: &start, WaitingEnd: &end, WaitingMax: &end,
		ThroughputChange: math.NaN()}
	if got := trendReason(sc, true); strings.Contains(got, "output tok/s") || !strings.Contains(got, "embeddings return no tokens") {
		t.Errorf("embeddings: %q", got)
	}
	if got := trendReason(sc, false); !strings.Contains(got, "but output tok/s was not flat") {
		t.Errorf("generation: %q", got)
	}
}

package report

import (
	"regexp"
	"testing"

	"github.com/servebench/servebench/report/correlate"
)

// onePlural finds a count of one followed by a plural noun: "1 requests",
// "at most 1 requests in flight", "1 times", "≥ 1 requests/s".
var onePlural = regexp.MustCompile(`(^|[^0-9.,])1 (requests|workers|times|arrivals|windows|stages|budgets|samples|preemptions|responses|files|streams|runs|values|gaps|scrapes|warmup requests|completed requests|ok requests)\b`)

func TestFormatCount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		got, want string
	}{
		{FormatCount(1, "request", "requests"), "1 request"},
		{FormatCount(0, "request", "requests"), "0 requests"},
		{FormatCount(int64(2), "request", "requests"), "2 requests"},
		{FormatCountOf(1, "time", "times"), "1 time"},
		{FormatCountOf(1.5, "request", "requests"), "1.5 requests"},
		{FormatCountOf(2300, "request", "requests"), "2,300 requests"},
		{were(1), "was"}, {were(int64(3)), "were"},
		{formatNumber(1, "requests/s"), "1 request/s"},
		{formatNumber(1, "tokens/s"), "1 token/s"},
		{formatNumber(29.8, "requests/s"), "29.8 requests/s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestNoOnePlural writes every sentence that counts something with counts
// of one: none may say "1 requests".
func TestNoOnePlural(t *testing.T) {
	t.Parallel()
	one := 1.0
	var texts []string
	texts = append(texts,
		StageLoad{Loop: "closed", Concurrency: 1, Requests: 1, WarmupRequests: 1}.String(),
		StageLoad{Loop: "closed", Concurrency: 1, Requests: 1, WarmupRequests: 1, WarmupS: 2}.String(),
		(&Verdict{Pass: true, Checks: make([]Check, 1)}).String(),
		(&Verdict{Failed: 1, Checks: make([]Check, 1)}).String(),
		(&Verdict{Inconclusive: 1, Checks: make([]Check, 1)}).String(),
		preemptionFinding(&correlate.Correlation{Preemptions: &one, PreemptedRequests: 1}),
		limit(&correlate.StageCorrelation{KVUsageMax: new(50.0), RunningMax: &one}),
		limit(&correlate.StageCorrelation{RunningMax: &one}),
		limit(&correlate.StageCorrelation{Preemptions: &one}),
	)
	l := &correlate.Load{Open: true, Cap: 1, Dropped: 1, Arrivals: 1, WaitingMax: &one, RunningMax: &one, PinnedShare: new(0.5), CeilingMean: &one}
	f := facts{l: l, offered: 2, served: 1, fellBehind: true}
	texts = append(texts, f.overload(), f.full(), f.waiting())
	l.Open = false
	texts = append(texts, f.full(), f.waiting())
	sc := &correlate.StageCorrelation{Name: "s", Trend: correlate.VerdictNotSaturated, QueuedWindows: 1, WaitingWindows: 1, WaitingMax: &one,
		WaitingStart: new(0.0), WaitingEnd: &one, ThroughputChange: 0}
	texts = append(texts, trendReason(sc, false))
	sc.Trend = correlate.VerdictSaturated
	texts = append(texts, trendReason(sc, false))
	sc.Trend = correlate.VerdictQueueing
	texts = append(texts, trendReason(sc, false))
	st := Stage{Name: "s", Requests: Requests{Dropped: 1, Scheduled: 1}}
	texts = append(texts, dropSentence(&st, nil, nil))
	for _, s := range texts {
		if m := onePlural.FindString(s); m != "" {
			t.Errorf("%q says %q", s, m)
		}
	}
}

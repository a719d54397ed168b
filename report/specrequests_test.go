package report

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/results"
)

// TestDraftTally sums the requests' own draft counts: requests without
// them count only among the completed, and a request whose output count
// is a local estimate stays out of tokens per step.
func TestDraftTally(t *testing.T) {
	var d draftTally
	for _, r := range []results.Result{
		{OutputTokens: 200, DraftTokens: 347, DraftAccepted: 65},
		{OutputTokens: 100, DraftTokens: 120, DraftAccepted: 50},
		{OutputTokens: 40, DraftTokens: 30, DraftAccepted: 10, Estimated: true},
		{OutputTokens: 9},
	} {
		d.add(&r)
	}
	var all draftTally
	all.merge(&d)
	got := all.figures()
	want := RequestSpecDecode{Source: SpecSourceRequests, Requests: 3, OfRequests: 4, DraftTokens: 497, Accepted: 125,
		AcceptanceRate: round(125.0/497, 6), TokensPerStep: round(300.0/(300-115), 6), StepRequests: 2}
	if got == nil || *got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if (&draftTally{ok: 5}).figures() != nil {
		t.Error("figures from requests that returned no draft counts")
	}
}

// TestWriteSpecDecode: the counters' line when the server exports them,
// the requests' own counts otherwise, and both when they disagree.
func TestWriteSpecDecode(t *testing.T) {
	counters := &results.SpecDecode{Source: "counters", AcceptanceRate: 0.25, AcceptLength: 2, DraftLength: 4}
	near := &RequestSpecDecode{Source: SpecSourceRequests, Requests: 3, OfRequests: 3, DraftTokens: 400, Accepted: 105, AcceptanceRate: 0.2625, TokensPerStep: 1.5, StepRequests: 3}
	far := &RequestSpecDecode{Source: SpecSourceRequests, Requests: 3, OfRequests: 4, DraftTokens: 400, Accepted: 200, AcceptanceRate: 0.5}
	cases := []struct {
		name       string
		e          Efficiency
		has, hasnt []string
	}{
		{"counters", Efficiency{SpecDecode: counters}, []string{"mean acceptance length 2 tokens per step (drafts of 4), acceptance rate 25.0 % (from the server's counters)"}, []string{SpecSourceRequests}},
		{"requests", Efficiency{SpecDecodeRequests: near}, []string{"speculative decoding: acceptance rate 26.2 % (105 of 400 draft tokens accepted), 1.5 tokens per step (output ÷ (output − accepted) over 3 requests); " + SpecSourceRequests + ": 3 of 3 completed requests returned draft counts"}, []string{"counters"}},
		{"agree", Efficiency{SpecDecode: counters, SpecDecodeRequests: near}, []string{"from the server's counters"}, []string{SpecSourceRequests}},
		{"disagree", Efficiency{SpecDecode: counters, SpecDecodeRequests: far}, []string{"from the server's counters", "\n  the requests' own counts differ: acceptance rate 50.0 % (200 of 400 draft tokens accepted); " + SpecSourceRequests + ": 3 of 4 completed requests"}, []string{"tokens per step (output"}},
		{"none", Efficiency{}, nil, []string{"speculative"}},
	}
	for _, c := range cases {
		var b strings.Builder
		writeSpecDecode(&b, "", &c.e)
		for _, s := range c.has {
			if !strings.Contains(b.String(), s) {
				t.Errorf("%s: %q lacks %q", c.name, b.String(), s)
			}
		}
		for _, s := range c.hasnt {
			if strings.Contains(b.String(), s) {
				t.Errorf("%s: %q has %q", c.name, b.String(), s)
			}
		}
	}
}

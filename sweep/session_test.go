package sweep

import (
	"context"
	"strings"
	"testing"

	"github.com/servebench/servebench/scenario"
)

// TestSessionCapacitySearch is issue 24's capacity search over concurrent
// sessions: scenarios/agentic-capacity.yaml searches how many agent
// sessions held open at once the simulator sustains within a TTFT p90
// budget, in virtual time. The answer is a count of sessions with its
// bracket one session wide: the probe at the answer passed its budgets,
// the one above it did not (failed, or indeterminate: its intervals
// straddled the limit), and the probes agree with the order of the
// counts (every lower count probed passed, every higher one did not).
func TestSessionCapacitySearch(t *testing.T) {
	t.Parallel()
	sc, err := scenario.Load("../scenarios/agentic-capacity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if raceEnabled {
		// Fewer probes, around the capacity the plain pass finds in the
		// file's range: the race detector makes each virtual probe ten times
		// slower.
		if err := sc.Override("sweep.search.between=[8, 11]"); err != nil {
			t.Fatal(err)
		}
	}
	p, err := NewPlan(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Execute(context.Background(), Options{NoPlots: raceEnabled, Dir: t.TempDir(), Probe: virtualProbe})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Search) != 1 {
		t.Fatalf("%d searches, want 1", len(s.Search))
	}
	r := s.Search[0]
	if r.Status != SearchFound || r.Answer == nil || r.Bracket[0] == nil || r.Bracket[1] == nil {
		t.Fatalf("search %+v: want an answer and its bracket", r)
	}
	t.Logf("capacity %g %s, bracket [%g, %g), confidence %s: %s", *r.Answer, r.Unit, *r.Bracket[0], *r.Bracket[1], r.Confidence, r.Reason)
	if r.Unit != "sessions" || !strings.Contains(r.Reason, " sessions") {
		t.Errorf("unit %q, reason %q: want the answer in sessions", r.Unit, r.Reason)
	}
	if *r.Bracket[0] != *r.Answer || *r.Bracket[1]-*r.Bracket[0] != 1 {
		t.Errorf("bracket [%g, %g) around %g: want one session wide, from the answer", *r.Bracket[0], *r.Bracket[1], *r.Answer)
	}
	for _, pr := range r.Probes {
		if want := pr.Value <= *r.Answer; pr.Pass != want {
			t.Errorf("probe at %g sessions: pass %v (%s), answer %g", pr.Value, pr.Pass, pr.Decided, *r.Answer)
		}
	}
}

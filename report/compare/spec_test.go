package compare

import (
	"strings"
	"testing"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// TestSpecDraftWarning: acceptance rates of different draft lengths are
// not compared without a warning naming the figure that compares.
func TestSpecDraftWarning(t *testing.T) {
	t.Parallel()
	eff := func(k, rate, length float64) *report.Efficiency {
		return &report.Efficiency{SpecDecode: &results.SpecDecode{DraftLength: k, AcceptanceRate: rate, AcceptLength: length}}
	}
	w := SpecDraftWarning("k3", eff(3, 0.7, 3.1), "k5", eff(5, 0.5, 3.5))
	if !strings.Contains(w, "drafted 3 tokens in k3 and 5 in k5") || !strings.Contains(w, "mean acceptance length, 3.1 against 3.5") {
		t.Errorf("warning %q", w)
	}
	if w := SpecDraftWarning("a", eff(3, 0.7, 3.1), "b", eff(3, 0.6, 2.8)); w != "" {
		t.Errorf("same draft length warned: %q", w)
	}
	if w := SpecDraftWarning("a", eff(3, 0.7, 3.1), "b", &report.Efficiency{}); w != "" {
		t.Errorf("one side without speculation warned: %q", w)
	}
}

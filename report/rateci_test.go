package report

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestIssue21RateIntervalInSummary: the output throughput carries its
// 95 % interval in summary.json (batch means over the timeline's full
// windows, the interval budgets and comparisons already judge by), it
// holds the figure, and a run too short for five full windows has none
// rather than one made up.
func TestIssue21RateIntervalInSummary(t *testing.T) {
	t.Parallel()
	build := func(span time.Duration) (*Aggregate, *Summary) {
		rng := rand.New(rand.NewPCG(4, 2))
		a := New()
		n := int(span / (50 * msec))
		for i := range n {
			r := okResult(uint64(i), 0, time.Duration(i)*50*msec, time.Duration(20+rng.IntN(60))*msec, time.Duration(5+rng.IntN(10))*msec, 5+rng.IntN(40))
			a.Add(&r)
		}
		return a, a.Summary()
	}
	a, s := build(30 * time.Second)
	for _, st := range []*Stage{&s.Overall, &s.Stages[0]} {
		iv := st.OutputTokensPerSecCI
		if iv == nil {
			t.Fatalf("%s: a 30 s run has no throughput interval", st.Name)
		}
		if !(iv[0] <= st.OutputTokensPerSec && st.OutputTokensPerSec <= iv[1]) || !(iv[1] > iv[0]) {
			t.Errorf("%s: %g tokens/s with interval %v: not an interval around it", st.Name, st.OutputTokensPerSec, *iv)
		}
		lo, hi, ok := a.RateInterval(st, 0.95)
		if !ok || math.Abs(lo-iv[0]) > 0.001 || math.Abs(hi-iv[1]) > 0.001 {
			t.Errorf("%s: summary's interval %v, RateInterval [%g, %g] %v", st.Name, *iv, lo, hi, ok)
		}
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte(`"output_tokens_per_s_ci_95": [`)) {
		t.Error("summary.json does not hold output_tokens_per_s_ci_95")
	}
	if _, short := build(3 * time.Second); short.Overall.OutputTokensPerSecCI != nil {
		t.Errorf("a 3 s run (fewer than five full windows) has a throughput interval %v", *short.Overall.OutputTokensPerSecCI)
	}
}

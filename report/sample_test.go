package report

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// sampleResult is the i-th of a run's short ok requests; every fourth
// misses a 30 ms TTFT objective.
func sampleResult(i int) results.Result {
	sent := time.Duration(i)*time.Millisecond + time.Millisecond
	ttft := 20 * time.Millisecond
	if i%4 == 0 {
		ttft = 40 * time.Millisecond
	}
	ct := []time.Duration{ttft, ttft + 5*time.Millisecond}
	return results.Result{Seq: uint64(i), Outcome: results.OK, API: results.APIChat, Stream: true, Scheduled: sent, Sent: sent,
		FirstToken: sent + ttft, FirstContent: sent + ttft, LastToken: sent + ct[1], End: sent + ct[1], ChunkTimes: ct,
		PromptTokens: 8, InputTokens: 8, OutputTokens: 2, MaxTokens: 2}
}

// TestRequestLogSample: past maxKept completed requests a stage keeps a
// sample of maxKept, the same whatever the order the records came in, and
// goodput from it is the whole run's within sampling error.
func TestRequestLogSample(t *testing.T) {
	if testing.Short() {
		t.Skip("adds 500,000 records twice; skipped with -short")
	}
	const n = 5 * maxKept
	fill := func(order func(int) int) *requestLog {
		l := newRequestLog(results.Metrics())
		for i := range n {
			r := sampleResult(order(i))
			l.add(&r, l.metrics, observe(l.metrics, &r))
		}
		return &l
	}
	fwd, rev := fill(func(i int) int { return i }), fill(func(i int) int { return n - 1 - i })
	a, b := fwd.stages[0], rev.stages[0]
	if len(a.keys) != maxKept || len(a.figs) != maxKept*len(fwd.metrics) || a.ok != n {
		t.Fatalf("kept %d keys, %d figures, of %d ok; want %d, %d of %d", len(a.keys), len(a.figs), a.ok, maxKept, maxKept*len(fwd.metrics), n)
	}
	ka, kb := slices.Clone(a.keys), slices.Clone(b.keys)
	slices.Sort(ka)
	slices.Sort(kb)
	if !slices.Equal(ka, kb) {
		t.Errorf("the kept requests depend on the order of the records")
	}
	sc := fwd.scopeOf(nil)
	share, _, ok := sc.goodput(30, 0, 0)
	// 3 in 4 meet the objective; a sample of 100,000 of 500,000 has a
	// standard error of about 0.12 %.
	if !ok || math.Abs(share-0.75) > 0.006 {
		t.Errorf("goodput %v from the sample, want 0.75 ± 0.006", share)
	}
	if s := sc.sampled(); s != "from a uniform sample of 100000 of the 500000 completed requests" {
		t.Errorf("sampled() = %q", s)
	}
	whole := newRequestLog(results.Metrics())
	r := sampleResult(1)
	whole.add(&r, whole.metrics, observe(whole.metrics, &r))
	if sc := whole.scopeOf(nil); sc.sampled() != "" {
		t.Errorf("a log holding every request says %q", sc.sampled())
	}
}

// observe returns r's observations of each of ms.
func observe(ms []results.Metric, r *results.Result) [][]time.Duration {
	obs := make([][]time.Duration, len(ms))
	for i, m := range ms {
		obs[i] = m.Observe(r, nil)
	}
	return obs
}

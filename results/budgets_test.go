package results

import "testing"

func TestMinSamplesFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stat string
		want int
	}{{"p50", 4}, {"p90", 35}, {"p95", 73}, {"p99", 381}, {"p99_9", 3838}}
	for _, tc := range tests {
		q, ok := Quantile(tc.stat)
		if !ok {
			t.Fatalf("%s is not a quantile", tc.stat)
		}
		if got := MinSamplesFor(q); got != tc.want {
			t.Errorf("MinSamplesFor(%s) = %d, want %d", tc.stat, got, tc.want)
		}
	}
	for _, s := range []string{"mean", "max", "min"} {
		if _, ok := Quantile(s); ok {
			t.Errorf("%s counted as a quantile", s)
		}
	}
}

// TestMetricTable checks the metric table against the budgets schema:
// every budget field names a metric marked Budget, and every latency
// metric observes request records.
func TestMetricTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, f := range (&BudgetSet{}).Fields() {
		m, ok := MetricByName(f.Metric)
		if !ok || !m.Budget {
			t.Errorf("budget field %s: metric %+v, found %v", f.Metric, m, ok)
		}
		seen[f.Metric] = true
	}
	for _, m := range Metrics() {
		if m.Budget && !seen[m.Name] {
			t.Errorf("metric %s is marked Budget but BudgetSet has no such field", m.Name)
		}
		if (m.Class == Latency) != (m.Observe != nil) {
			t.Errorf("metric %s: class %d, Observe set %v", m.Name, m.Class, m.Observe != nil)
		}
		if len(m.Stats()) == 0 || m.Unit == "" || m.About == "" {
			t.Errorf("metric %s is incomplete: %+v", m.Name, m)
		}
	}
}

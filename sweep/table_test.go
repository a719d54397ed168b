package sweep

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/servebench/servebench/live"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/report/compare"
	"github.com/servebench/servebench/results"
)

// preemptFixture is a real run of sim://tiny (report/testdata/preempt.yaml
// says how it was made).
const preemptFixture = "../report/testdata/preempt.jsonl.gz"

// decode is the figure the test adds to a copy of the metric table: the
// time from a request's first token to its end.
func decode(r *results.Result) (time.Duration, bool) {
	e2e, ok1 := r.E2E()
	ttft, ok2 := r.TTFT()
	return e2e - ttft, ok1 && ok2
}

// withDecode returns a copy of the metric table with decode_ms appended:
// one line, as a metric added to results/metrics.go would be.
func withDecode() results.Table {
	return append(results.Metrics(), results.Metric{Name: "decode_ms", Unit: "ms", Class: results.Latency, Budget: true,
		Observe: func(r *results.Result, dst []time.Duration) []time.Duration {
			if d, ok := decode(r); ok {
				dst = append(dst, d)
			}
			return dst
		}, About: "first token → end"})
}

// TestTableMetricAdded adds a metric to a copy of the table and checks that
// every output derived from the table picks it up with no other edit: the
// summary (summary.json and the terminal text), the budgets' verdict,
// bench compare's rows, the
// per-request CSV, the sweep's figures (sweep.json, sweep.csv) and the
// live /metrics page. (Budget validation is scenario's
// TestTableMetricAddedBudgets; the twin's figures are a fixed set, see
// twin.Figures.) The records are a real run's.
func TestTableMetricAdded(t *testing.T) {
	t.Parallel()
	table := withDecode()
	rd := report.Reader{Metrics: table}
	agg, err := rd.FromFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	sum := agg.Summary()
	want := decodeTimes(t)
	d := sum.Overall.Dist("decode_ms")
	if d == nil || d.Count != int64(len(want)) || len(want) == 0 {
		t.Fatalf("summary: decode_ms %+v, want %d samples", d, len(want))
	}
	if hi := slices.Max(want); !near(d.Max, ms(hi), 0.01) {
		t.Errorf("summary: decode_ms max %g ms, the records' %g ms", d.Max, ms(hi))
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js, sum); err != nil || !strings.Contains(js.String(), `"latencies_ms": {`+"\n"+`      "decode_ms": {`) {
		t.Errorf("summary.json lacks decode_ms under latencies_ms (%v)", err)
	}
	var txt bytes.Buffer
	if err := report.WriteText(&txt, sum); err != nil || !strings.Contains(txt.String(), "\n  decode_ms  ") {
		t.Errorf("the terminal text has no decode_ms row (%v):\n%s", err, txt.String())
	}
	checkDecodeBudget(t, agg, sum, d)
	checkDecodeCompare(t, rd, agg)
	checkDecodeCSV(t, rd, want)
	checkDecodeSweep(t, sum, d)
	checkDecodeLive(t, table, len(want))
}

// decodeTimes returns decode of the fixture's measured ok requests, as the
// summary counts them.
func decodeTimes(t *testing.T) []time.Duration {
	t.Helper()
	files, err := results.OpenFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	var out []time.Duration
	for rec, err := range files.All() {
		if err != nil {
			t.Fatal(err)
		}
		if r := rec.Result; r != nil && r.Outcome == results.OK && !r.Warmup {
			if d, ok := decode(r); ok {
				out = append(out, d)
			}
		}
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func near(a, b, rel float64) bool { return a >= b*(1-rel) && a <= b*(1+rel) }

// checkDecodeBudget judges budgets on decode_ms: met above the max, missed
// below the p50.
func checkDecodeBudget(t *testing.T, agg *report.Aggregate, sum *report.Summary, d *report.Dist) {
	t.Helper()
	hi, lo := d.Max*2, d.P50/2
	b := &results.Budgets{Overall: &results.BudgetSet{Limits: map[string]*results.Limits{
		"decode_ms": {Max: &hi, P50: &lo}, "error_rate": {Max: &hi}}}}
	v := agg.Evaluate(sum, b, nil)
	var got []string
	for _, c := range v.Checks {
		got = append(got, c.Name+" "+c.Unit+" "+c.Status)
	}
	want := []string{"overall.error_rate.max fraction met", "overall.decode_ms.p50 ms missed", "overall.decode_ms.max ms met"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("verdict checks:\n%s\nwant (the new metric after the table's, as it is appended):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkDecodeCompare compares the run with itself: the overall table has
// decode_ms rows (p50, p99), unchanged.
func checkDecodeCompare(t *testing.T, rd report.Reader, base *report.Aggregate) {
	t.Helper()
	cand, err := rd.FromFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	c, err := compare.Runs(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var stats []string
	for _, r := range c.Tables[0].Rows {
		if r.Metric == "decode_ms" && r.Unit == "ms" && r.Base == r.New {
			stats = append(stats, r.Stat)
		}
	}
	if len(stats) == 0 {
		t.Errorf("bench compare's overall table has no decode_ms row: %+v", c.Tables[0].Rows)
	}
}

// checkDecodeCSV checks the per-request CSV's last column.
func checkDecodeCSV(t *testing.T, rd report.Reader, want []time.Duration) {
	t.Helper()
	var b bytes.Buffer
	if _, err := rd.WriteCSV(&b, preemptFixture); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if head := rows[0]; !slices.Equal(head, append(slices.Clone(report.CSVColumns), "decode_ms")) {
		t.Fatalf("CSV header %v: want CSVColumns, then decode_ms", head)
	}
	var got []time.Duration
	for _, r := range rows[1:] {
		if r[len(r)-1] != "" && r[4] == "false" && r[5] == "ok" {
			v, err := strconv.ParseFloat(r[len(r)-1], 64)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, time.Duration(v*float64(time.Millisecond)))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("CSV: %d decode_ms cells, want %d", len(got), len(want))
	}
	for i := range got {
		if diff := got[i] - want[i]; diff < -time.Microsecond || diff > time.Microsecond {
			t.Errorf("CSV row %d: decode_ms %v, the record's %v", i, got[i], want[i])
		}
	}
}

// checkDecodeSweep checks sweep.json's and sweep.csv's figures of a run.
func checkDecodeSweep(t *testing.T, sum *report.Summary, d *report.Dist) {
	t.Helper()
	m := metricsOf(sum)
	if m.Latencies["decode_ms.p50"] != d.P50 || m.Latencies["decode_ms.p99"] != d.P99 {
		t.Errorf("sweep figures %v, want decode_ms p50 %g and p99 %g", m.Latencies, d.P50, d.P99)
	}
	mean := meanMetrics([]*Metrics{m, m})
	s := &Summary{Parameters: []string{"load.stages[0].concurrency"},
		Runs: []RunRecord{{Label: "c=1", Values: map[string]string{"load.stages[0].concurrency": "1"}, Status: "ok", Metrics: mean}}}
	var b bytes.Buffer
	if err := WriteCSV(&b, s); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head, row := rows[0], rows[1]
	if !slices.Equal(head[len(head)-2:], []string{"decode_p50_ms", "decode_p99_ms"}) || head[len(head)-3] != "error" {
		t.Fatalf("sweep.csv header %v: want decode_p50_ms, decode_p99_ms after error", head)
	}
	if v, _ := strconv.ParseFloat(row[len(row)-1], 64); !near(v, d.P99, 0.001) {
		t.Errorf("sweep.csv decode_p99_ms %s, want %g", row[len(row)-1], d.P99)
	}
	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(mean); err != nil || !strings.Contains(js.String(), `"latencies":{"decode_ms.p50":`) {
		t.Errorf("sweep.json figures lack decode_ms: %s (%v)", js.String(), err)
	}
}

// checkDecodeLive feeds the fixture's records to the live exporter and
// reads its histogram of the new metric.
func checkDecodeLive(t *testing.T, table results.Table, want int) {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp, err := live.New(reg, live.Run{Scenario: "preempt", StageCount: 2, Metrics: table})
	if err != nil {
		t.Fatal(err)
	}
	files, err := results.OpenFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range files.All() {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Result != nil {
			exp.Observe(rec.Result)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == "servebench_decode_seconds" {
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	if n != uint64(want) {
		t.Errorf("live: servebench_decode_seconds counted %d, want %d", n, want)
	}
}

// TestTableTodayUnchanged checks that with today's table the derived
// outputs are what they were before they were derived: every latency
// metric has its Stage field (no latencies_ms), the CSV ends at
// resent_written, the sweep has no extra figures and the live page no
// extra histogram.
func TestTableTodayUnchanged(t *testing.T) {
	t.Parallel()
	agg, err := report.FromFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	sum := agg.Summary()
	for _, m := range results.Metrics() {
		if m.Class == results.Latency && sum.Overall.Dist(m.Name) == nil {
			t.Errorf("latency metric %s has no summary figure", m.Name)
		}
	}
	if sum.Overall.Latencies != nil || metricsOf(sum).Latencies != nil {
		t.Errorf("today's table gave extra latencies: %v", sum.Overall.Latencies)
	}
	if got := report.CSVColumnsFor(results.Metrics()); !slices.Equal(got, report.CSVColumns) {
		t.Errorf("CSV columns %v, want %v", got, report.CSVColumns)
	}
	reg := prometheus.NewRegistry()
	if _, err := live.New(reg, live.Run{StageCount: 1}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var hists []string
	for _, mf := range mfs {
		if mf.GetType().String() == "HISTOGRAM" {
			hists = append(hists, mf.GetName())
		}
	}
	want := []string{live.MetricE2E, live.MetricITL, live.MetricTPOT, live.MetricTTFT}
	slices.Sort(hists)
	slices.Sort(want)
	if !slices.Equal(hists, want) {
		t.Errorf("live histograms %v, want %v", hists, want)
	}
}

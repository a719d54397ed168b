package twin

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/sim"
	"github.com/servebench/servebench/sweep"
)

// TestTableMetricAddedTwin adds a metric to a copy of the metric table (as
// sweep's TestTableMetricAdded does) and checks the twin's figures pick it
// up with no other edit: measured from a real run's summary, its band
// from perturbed sweeps' half-differences, its holdout error and row.
func TestTableMetricAddedTwin(t *testing.T) {
	t.Parallel()
	table := append(results.Metrics(), results.Metric{Name: "decode_ms", Unit: "ms", Class: results.Latency, Budget: true,
		Observe: func(r *results.Result, dst []time.Duration) []time.Duration {
			e2e, ok1 := r.E2E()
			ttft, ok2 := r.TTFT()
			if ok1 && ok2 {
				dst = append(dst, e2e-ttft)
			}
			return dst
		}, About: "first token → end"})
	agg, err := report.Reader{Metrics: table}.FromFiles("../report/testdata/preempt.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	st := agg.Summary().Overall
	measured := figuresOfStage(&st)
	d := st.Dist("decode_ms")
	if d == nil || d.Count == 0 || measured.Latencies["decode_ms.p50"] != d.P50 || measured.Latencies["decode_ms.p99"] != d.P99 {
		t.Fatalf("measured figures %v, want decode_ms p50 and p99 of %+v", measured.Latencies, d)
	}

	// The band: two perturbed twins 4 ms apart give a half-difference of 2.
	point := func(v float64) sweep.Point {
		return sweep.Point{Label: "c=4", Metrics: &sweep.Metrics{TTFTP50: 10, Latencies: map[string]float64{"decode_ms.p50": v}}}
	}
	accs := map[string]*bandAcc{}
	accumulate(accs, [2]*sweep.Summary{{Points: []sweep.Point{point(10)}}, {Points: []sweep.Point{point(6)}}})
	central := figuresOf(point(8).Metrics)
	p := PredictedPoint{Central: central, Low: central.clone(), High: central.clone()}
	p.setBand(accs["c=4"], bandZ, sim.Config{})
	if lo, hi := p.Low.Latencies["decode_ms.p50"], p.High.Latencies["decode_ms.p50"]; math.Abs(lo-(8-bandZ*2)) > 1e-9 || math.Abs(hi-(8+bandZ*2)) > 1e-9 {
		t.Errorf("band of decode_ms.p50 [%g, %g], want 8 ± %g", lo, hi, bandZ*2)
	}
	if central.Latencies["decode_ms.p50"] != 8 {
		t.Errorf("setting the band moved the central figure: %v", central.Latencies)
	}

	predicted := measured.clone()
	predicted.set("decode_ms.p99", measured.get("decode_ms.p99")*1.1)
	errs := holdoutErrors(measured, predicted)
	if e := errs["decode_ms.p99"]; math.Abs(e-0.1) > 1e-9 || errs["decode_ms.p50"] != 0 {
		t.Errorf("holdout errors %v, want decode_ms.p99 +10 %%, p50 0", errs)
	}
	var b bytes.Buffer
	h := &HoldoutResult{Calibration: &Result{}, Stages: []HoldoutStage{{Run: "r", Stage: "s", Measured: measured, Predicted: predicted, Errors: errs}}}
	if err := WriteHoldout(&b, h); err != nil || !strings.Contains(b.String(), "decode_ms.p99") || !strings.Contains(b.String(), "+10.0 %") {
		t.Errorf("holdout table lacks decode_ms.p99 at +10 %% (%v):\n%s", err, b.String())
	}
}

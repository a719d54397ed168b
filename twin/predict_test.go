package twin

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
	"github.com/servebench/servebench/sim"
)

// TestHoldout fits on two stages of one run and predicts the third: the
// held-out stage's throughput and median ITL within 5 %.
func TestHoldout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := writeTruth(t, dir)
	p := virtualRun(t, dir, workload("three", target, stageDoc(2, "12s"), stageDoc(5, "12s"), stageDoc(8, "12s")), 300*time.Microsecond)
	h, err := Holdout(context.Background(), []string{p}, Options{Holdout: []string{"c5"}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteHoldout(&b, h); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	if len(h.Stages) != 1 || h.Stages[0].Stage != "c5" {
		t.Fatalf("held-out stages %+v", h.Stages)
	}
	for _, k := range []string{"output_tokens_per_s", "itl_p50_ms"} {
		if e := h.Stages[0].Errors[k]; math.Abs(e) > 0.05 {
			t.Errorf("held-out %s off by %.1f %%", k, 100*e)
		}
	}
	if _, err := Holdout(context.Background(), []string{p}, Options{Holdout: []string{"c7"}}); err == nil || !strings.Contains(err.Error(), `no stage "c7"`) {
		t.Errorf("holding out a stage the runs lack: err = %v", err)
	}
}

// TestPredictBand predicts a concurrency sweep and a rate search on a
// twin: each value gets a band from the fit's uncertainty that holds the
// central prediction, and the central prediction of a value never run is
// close to the truth.
func TestPredictBand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := writeTruth(t, dir)
	var paths []string
	for _, c := range []int{2, 8} {
		paths = append(paths, virtualRun(t, dir, workload(fmt.Sprintf("cal-%d", c), target, stageDoc(c, "10s")), 300*time.Microsecond))
	}
	res, err := Calibrate(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	twinPath := filepath.Join(dir, "twin.yaml")
	var b bytes.Buffer
	if err := WriteConfig(&b, res); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(twinPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := workload("what-if", "sim://tiny", stageDoc(2, "5s")) + `budgets: {overall: {itl_ms: {p50: 4}}}
sweep:
  parameters: {'load.stages[0].concurrency': [3, 5, 12]}
`
	sc, err := scenario.Parse("what-if.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "predict")
	pred, err := Predict(context.Background(), sc, twinPath, PredictOptions{Dir: out})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := WritePrediction(&text, pred); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", text.String())
	if len(pred.Points) != 3 || pred.BandRuns != 8 {
		t.Fatalf("%d points, %d band runs; want 3 and 8", len(pred.Points), pred.BandRuns)
	}
	if raceEnabled {
		return // the search below repeats the same code paths, at nine times the cost
	}
	for _, p := range pred.Points[:2] {
		c, lo, hi := p.Central.OutputTokensPerSec, p.Low.OutputTokensPerSec, p.High.OutputTokensPerSec
		if !(lo <= c && c <= hi && hi > lo) || !(p.Low.ITLP50 <= p.Central.ITLP50 && p.Central.ITLP50 <= p.High.ITLP50) || p.Extrapolated != "" {
			t.Errorf("%s: band [%g, %g] around %g (%s)", p.Label, lo, hi, c, p.Extrapolated)
		}
	}
	// Twelve at once lies beyond the 2 and 8 calibrated on, and the batch
	// limit was never reached: no band, and the reason.
	if p := pred.Points[2]; !reflect.DeepEqual(p.Low, p.Central) || !reflect.DeepEqual(p.High, p.Central) ||
		!strings.Contains(p.Extrapolated, "up to 12 requests at once, calibrated on") || !strings.Contains(p.Extrapolated, "max_num_seqs 256") {
		t.Errorf("%s: extrapolated %q, band [%v, %v]", p.Label, p.Extrapolated, p.Low, p.High)
	}
	if !strings.Contains(text.String(), "extrapolated, no band") || !strings.Contains(pred.Band, "fit-only") {
		t.Errorf("the extrapolation or the fit-only band is not said:\n%s", text.String())
	}
	for _, name := range []string{"sweep.json", "sweep.html"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("prediction output: %v", err)
		}
	}
	// The value never run against the truth.
	c5 := pred.Points[1]
	want := sc.Clone()
	if err := want.Override("sweep=", "load.stages[0].concurrency=5"); err != nil {
		t.Fatal(err)
	}
	trueCfg, _ := sim.ConfigFromURL(target)
	ws, err := run.Simulate(context.Background(), want, trueCfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(c5.Central.OutputTokensPerSec, ws.Overall.OutputTokensPerSec); e > 0.05 {
		t.Errorf("concurrency 5: predicted %.1f tok/s, true %.1f", c5.Central.OutputTokensPerSec, ws.Overall.OutputTokensPerSec)
	}

	// A search on the twin: the capacity with its spread.
	search := workload("cap", "sim://tiny", "    - {rate: 5, requests: 150, max_concurrency: 64}\n") + `budgets: {overall: {ttft_ms: {p90: 60}}}
sweep:
  search: {parameter: 'load.stages[0].rate', between: [5, 45], resolution: 5, repeats: 1}
`
	ss, err := scenario.Parse("cap.yaml", []byte(search))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := Predict(context.Background(), ss, twinPath, PredictOptions{Dir: filepath.Join(dir, "search")})
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	_ = WritePrediction(&text, sp)
	t.Logf("\n%s", text.String())
	if len(sp.Searches) != 1 || sp.Searches[0].Answer == nil || sp.Searches[0].AnswerLow == nil ||
		*sp.Searches[0].AnswerLow > *sp.Searches[0].Answer || *sp.Searches[0].AnswerHigh < *sp.Searches[0].Answer {
		t.Errorf("search prediction %+v", sp.Searches)
	}
}

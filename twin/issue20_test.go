package twin

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/servebench/servebench/internal/realtime"
	"github.com/servebench/servebench/internal/slotserver"
	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// slotRun runs closed-loop stages (concurrency, requests) against url in
// real time and returns the run's directory and summary.
func slotRun(t *testing.T, url string, output int, stages ...[2]int) (string, *report.Summary) {
	t.Helper()
	var b strings.Builder
	for _, st := range stages {
		fmt.Fprintf(&b, "    - {name: c%d, concurrency: %d, requests: %d}\n", st[0], st[0], st[1])
	}
	doc := fmt.Sprintf(`name: slots
target: {url: %q, model: m}
request: {ignore_eos: true}
prompts: {seed: 3, input_tokens: 32, output_tokens: %d}
scrape: {interval: 250ms}
load:
  stages:
%s`, url, output, b.String())
	sc, err := scenario.Parse("slots.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := run.Run(context.Background(), sc, run.Options{Dir: dir, NoPlots: true})
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum
}

// writeTwin writes a calibration as a twin file and returns its path.
func writeTwin(t *testing.T, res *Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteConfig(&b, res); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "twin.yaml")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// predictAt predicts a closed loop of concurrency c on the twin.
func predictAt(t *testing.T, url, twinPath string, c, requests, output int) *Prediction {
	t.Helper()
	doc := fmt.Sprintf("name: at\ntarget: {url: %q, model: m}\nrequest: {ignore_eos: true}\nprompts: {seed: 3, input_tokens: 32, output_tokens: %d}\n"+
		"scrape: {interval: 250ms}\nload: {stages: [{name: c%d, concurrency: %d, requests: %d}]}\n", url, output, c, c, requests)
	sc, err := scenario.Parse("at.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	pred, err := Predict(context.Background(), sc, twinPath, PredictOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return pred
}

// TestIssue20TwinSlots is issue 20's fourth case: calibrated on
// concurrency 1 and 4 of a server with 4 slots, the twin used to assume a
// batch limit of 256 and predict concurrency 8 with a tight band, far
// from the server's queueing. The server's own word (llama.cpp's GET
// /props total_slots, recorded by the run) now sets max_num_seqs; where
// the server does not say, the prediction at 8 is marked extrapolated,
// with no band.
func TestIssue20TwinSlots(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("real-time runs")
	}
	t.Parallel()
	// Calibration and truth are real-time runs: a machine too busy to keep
	// a schedule slows the calibration's steps and inflates the twin's
	// costs (a prediction of 634 ms against 150 ms was seen so).
	if o := sleepOvershoot(); o > 2*time.Millisecond {
		t.Skipf("the machine is too busy for real-time runs: 1 ms sleeps wake %v late (p90)", o)
	}

	for _, props := range []bool{true, false} {
		t.Run(fmt.Sprintf("props=%v", props), func(t *testing.T) {
			t.Parallel()
			watch := sync.OnceValue(realtime.Watch())
			defer watch()
			srv := slotserver.Start(t, slotserver.Config{Slots: 4, StepOverhead: 4 * time.Millisecond, PerSeq: 500 * time.Microsecond,
				Metrics: "llamacpp", CountersAtEnd: true, Props: props})
			d, _ := slotRun(t, srv.URL, 24, [2]int{1, 6}, [2]int{4, 12})
			res, err := Calibrate([]string{d}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			e, _ := res.Estimate("max_num_seqs")
			pred := predictAt(t, srv.URL, writeTwin(t, res), 8, 16, 24)
			p := pred.Points[0]
			t.Logf("max_num_seqs %v (%s: %s); at 8: TTFT p50 %.1f ms [%.1f, %.1f]; %s", e.Value, e.Source, e.Note, p.Central.TTFTP50, p.Low.TTFTP50, p.High.TTFTP50, p.Extrapolated)
			if !props {
				if e.Source != "assumed" || !strings.Contains(p.Extrapolated, "up to 8 requests at once, calibrated on 1–4") || !reflect.DeepEqual(p.Low, p.Central) {
					t.Errorf("without the server's word: max_num_seqs %v (%s), extrapolated %q, band [%v, %v]", e.Value, e.Source, p.Extrapolated, p.Low, p.High)
				}
				return
			}
			if e.Value != 4 || e.Source != "measured" || !strings.Contains(e.Note, "GET /props total_slots = 4") {
				t.Fatalf("max_num_seqs = %v (%s: %s), want 4 from the server's /props", e.Value, e.Source, e.Note)
			}
			if p.Extrapolated != "" {
				t.Errorf("concurrency 8 on a 4-slot twin runs 4 at once, within the calibration: %q", p.Extrapolated)
			}
			_, want := slotRun(t, srv.URL, 24, [2]int{8, 16})
			if got, w := p.Central.TTFTP50, want.Overall.TTFT.P50; relErr(got, w) > 0.35 {
				if busy := watch(); busy > 0.05 {
					t.Skipf("TTFT p50 at 8 predicted %.1f ms, measured %.1f ms, while the machine could not keep a real-time schedule %.0f %% of the time: not judged", got, w, 100*busy)
				}
				t.Errorf("TTFT p50 at 8 predicted %.1f ms, measured %.1f ms: the queue behind 4 slots is not predicted", got, w)
			}
		})
	}
}

// TestIssue20BandCoverage is issue 20's bands: a 95 % band must hold what
// a new run measures 95 % of the time, and a real server's speed varies
// from run to run, not only from step to step. Each trial calibrates a
// twin from three runs (concurrency 1 and 4 each) of a server whose
// speed is drawn anew at every start (±12 %) and whose every step
// jitters (±10 %), predicts concurrency 2, and runs it once more on a
// fresh start: the truth. Across the trials the bands must hold the
// truth's TPOT p50 and E2E p50 in at least 90 % of cases. The fit's own
// uncertainty alone (the band before the run-to-run variation) holds it
// far less often. A machine too busy to keep a real-time schedule (1 ms
// sleeps woke over 1 ms late in more than a quarter of the samples taken
// during the runs) shifts calibrations and truths in ways no band of the
// server's can hold: the test then skips, with the coverage it saw.
//
// It runs only with SERVEBENCH_REALTIME_COVERAGE set: with 40 cases a
// band of true 95 % coverage falls below 90 % one time in seven, and a
// busy machine lowers it further, so in the suite it would fail without a
// defect. TestBandCoverageVirtual checks the same bands deterministically.
func TestIssue20BandCoverage(t *testing.T) {
	if testing.Short() || raceEnabled || !realTimeCoverage() {
		t.Skip("real-time coverage runs only with SERVEBENCH_REALTIME_COVERAGE=1 (TestBandCoverageVirtual covers it in virtual time)")
	}
	t.Parallel()
	// The runs are real time: a machine too busy to wake a sleeping
	// goroutine on time distorts the truth and the calibrations alike, in
	// ways no band of the server's can hold.
	if o := sleepOvershoot(); o > 2*time.Millisecond {
		t.Skipf("the machine is too busy for real-time runs: 1 ms sleeps wake %v late (p90)", o)
	}
	watch := realtime.Watch()
	const trials, parallel = 20, 2
	type outcome struct {
		held, cases int
		log         string
	}
	outs := make([]outcome, trials)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range trials {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			outs[i].held, outs[i].cases, outs[i].log = coverageTrial(t, uint64(i))
		})
	}
	wg.Wait()
	held, cases := 0, 0
	for _, o := range outs {
		held, cases = held+o.held, cases+o.cases
		t.Log(o.log)
	}
	share := float64(held) / float64(max(cases, 1))
	busy := watch()
	if busy > 0.25 {
		t.Skipf("the machine was too busy for real-time runs %.0f %% of the time (1 ms sleeps woke over 1 ms late; coverage %d of %d)", 100*busy, held, cases)
	}
	t.Logf("coverage: the 95 %% bands held the truth in %d of %d cases (%.0f %%); the machine was busy %.0f %% of the time", held, cases, 100*share, 100*busy)
	if share < 0.90 {
		t.Errorf("coverage %.0f %% (%d of %d): below 90 %%", 100*share, held, cases)
	}
}

// coverageTrial is one trial of TestIssue20BandCoverage: how many of its
// figures the band held, of how many, and a line saying so.
func coverageTrial(t *testing.T, seed uint64) (held, cases int, log string) {
	rng := rand.New(rand.NewPCG(seed, 20))
	start := func() *slotserver.Server {
		return slotserver.Start(t, slotserver.Config{Slots: 8, StepOverhead: 3 * time.Millisecond, PerSeq: 600 * time.Microsecond,
			PerPrefillToken: 4 * time.Microsecond, Scale: math.Max(0.6, 1+0.12*rng.NormFloat64()), Jitter: 0.1, Seed: rng.Uint64(),
			Metrics: "llamacpp", CountersAtEnd: true})
	}
	var dirs []string
	for range 3 {
		srv := start()
		d, _ := slotRun(t, srv.URL, 24, [2]int{1, 5}, [2]int{4, 8})
		dirs = append(dirs, d)
		srv.Close()
	}
	res, err := Calibrate(dirs, Options{})
	if err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	srv := start()
	pred := predictAt(t, srv.URL, writeTwin(t, res), 2, 8, 24)
	_, truth := slotRun(t, srv.URL, 24, [2]int{2, 8})
	p := pred.Points[0]
	var b strings.Builder
	fmt.Fprintf(&b, "trial %d (run-to-run %v):", seed, res.Between)
	for _, f := range []struct {
		name          string
		lo, c, hi, tr float64
	}{
		{"TPOT p50", p.Low.TPOTP50, p.Central.TPOTP50, p.High.TPOTP50, truth.Overall.TPOT.P50},
		{"E2E p50", p.Low.E2EP50, p.Central.E2EP50, p.High.E2EP50, truth.Overall.E2E.P50},
	} {
		cases++
		in := f.lo <= f.tr && f.tr <= f.hi && f.hi > f.lo
		if in {
			held++
		}
		fmt.Fprintf(&b, " %s %.2f [%.2f, %.2f] truth %.2f %v;", f.name, f.c, f.lo, f.hi, f.tr, in)
	}
	return held, cases, b.String()
}

package twin

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/run"
	"github.com/servebench/servebench/scenario"
)

// covRun runs closed-loop stages (concurrency, requests) on target in
// virtual time and returns the run's directory and summary.
func covRun(t *testing.T, target string, output int, stages ...[2]int) (string, *report.Summary) {
	t.Helper()
	doc := fmt.Sprintf("name: cov\ntarget: {url: %q}\nrequest: {ignore_eos: true}\nprompts: {seed: 3, input_tokens: 32, output_tokens: %d}\n"+
		"scrape: {interval: 250ms}\nload:\n  stages:\n", target, output)
	for _, st := range stages {
		doc += fmt.Sprintf("    - {name: c%d, concurrency: %d, requests: %d}\n", st[0], st[0], st[1])
	}
	sc, err := scenario.Parse("cov.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := run.Run(context.Background(), sc, run.Options{Dir: dir, Virtual: true, NoPlots: true})
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum
}

// TestBandCoverageVirtual is issue 20's band coverage, deterministic: the
// noisy server is the simulator, whose speed is drawn anew for every run
// (every cost ×(1 + 12 % noise)) and whose every step jitters (±10 %), in
// virtual time, so no busy machine can move a figure and the verdict is
// the same on every run of the suite. Each of 40 trials calibrates a twin
// from three runs (concurrency 1 and 4), predicts concurrency 2 and runs
// it once more at a fresh speed: the truth. The 95 % bands must hold the
// truth's TPOT p50 and E2E p50 in at least 90 % of the 80 cases. (The
// degrees of freedom of the run-to-run variation once counted each stage
// of a run as independent: the bands held 90 % of 120 cases; counted by
// runs, 96.7 %.)
func TestBandCoverageVirtual(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("40 calibrations (deterministic: the race detector would only slow them)")
	}
	t.Parallel()
	trials := 40
	if raceEnabled {
		trials = 2 // the calibrations and predictions, their outcome; the plain pass judges the coverage
	}
	held, cases := 0, 0
	for i := range trials {
		h, c, log := virtualTrial(t, uint64(i))
		held, cases = held+h, cases+c
		if testing.Verbose() {
			t.Log(log)
		}
	}
	if raceEnabled {
		if cases != 2*trials {
			t.Errorf("%d cases from %d trials", cases, trials)
		}
		return
	}
	share := float64(held) / float64(cases)
	t.Logf("coverage: the 95 %% bands held the truth in %d of %d cases (%.1f %%)", held, cases, 100*share)
	if share < 0.90 {
		t.Errorf("coverage %.1f %% (%d of %d): below 90 %%", 100*share, held, cases)
	}
}

// virtualTrial is one trial of TestBandCoverageVirtual.
func virtualTrial(t *testing.T, seed uint64) (held, cases int, log string) {
	rng := rand.New(rand.NewPCG(seed, 21))
	server := func() string {
		s := math.Max(0.6, 1+0.12*rng.NormFloat64())
		return fmt.Sprintf("sim://tiny?seed=%d&jitter_frac=0.1&step_overhead_us=%g&per_seq_us=%g&per_kv_token_ns=%g&per_prefill_token_us=%g",
			rng.Uint64()>>1, 1500*s, 50*s, 800*s, 4*s)
	}
	var dirs []string
	for range 3 {
		d, _ := covRun(t, server(), 24, [2]int{1, 5}, [2]int{4, 8})
		dirs = append(dirs, d)
	}
	res, err := Calibrate(dirs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pred := predictAt(t, "sim://tiny", writeTwin(t, res), 2, 8, 24)
	_, truth := covRun(t, server(), 24, [2]int{2, 8})
	p := pred.Points[0]
	log = fmt.Sprintf("trial %d:", seed)
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
		log += fmt.Sprintf(" %s %.2f [%.2f, %.2f] truth %.2f %v;", f.name, f.c, f.lo, f.hi, f.tr, in)
	}
	return held, cases, log
}

// realTimeCoverage says whether the real-time coverage test runs: it
// measures what the virtual one does against an HTTP server, and a busy
// machine moves its figures, so it runs only when asked.
func realTimeCoverage() bool { return os.Getenv("SERVEBENCH_REALTIME_COVERAGE") != "" }

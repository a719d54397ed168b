package twin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestCalibratePowerModel calibrates a twin on runs of the simulator with
// its power model on, at four batch sizes: the fitted idle and full-batch
// power are the simulator's within 10 %, with their uncertainty and the
// occupancy they span recorded; a run without GPU telemetry fits none and
// says why not.
func TestCalibratePowerModel(t *testing.T) {
	t.Parallel()
	target := "sim://tiny?gpus=2&idle_power_w=80&max_power_w=400"
	dir, _ := covRun(t, target, 64, [2]int{1, 12}, [2]int{2, 16}, [2]int{4, 24}, [2]int{8, 48})
	res, err := Calibrate([]string{dir}, Options{MaxNumSeqs: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := res.Config
	idle, _ := res.Estimate("idle_power_w")
	full, _ := res.Estimate("max_power_w")
	t.Logf("idle %.1f ± %.1f W, full %.1f ± %.1f W a GPU, %d GPUs; fit %+v", idle.Value, idle.StdErr, full.Value, full.StdErr, cfg.GPUs, cfg.Calibration.Power)
	if cfg.GPUs != 2 || relErr(cfg.IdlePowerW, 80) > 0.1 || relErr(cfg.MaxPowerW, 400) > 0.1 {
		t.Errorf("fitted %d GPUs, idle %.1f W, full %.1f W; want 2, 80 and 400 within 10 %%", cfg.GPUs, cfg.IdlePowerW, cfg.MaxPowerW)
	}
	if p := cfg.Calibration.Power; p == nil || p.OccupancyMax < 0.5 || p.Intervals < 4 || idle.StdErr <= 0 {
		t.Errorf("power fit %+v, idle stderr %v", p, idle.StdErr)
	}
	plain, _ := covRun(t, "sim://tiny", 64, [2]int{2, 16})
	res, err = Calibrate([]string{plain}, Options{MaxNumSeqs: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.PowerModel() || res.Config.Calibration.Power != nil {
		t.Errorf("a power model fitted without telemetry: %+v", res.Config)
	}
}

// TestPredictEnergy predicts joules per token at a batch size the twin
// was not run at (6, between the 4 and 8 it saw), with a band, against
// the simulator that made the runs: within 1 % (issue 25's acceptance).
// The power law is fitted on the footing the simulator applies it on
// (requests in the batch, prefill step included); fitted on streams from
// their first token, the twin ran 1.7 % hot here (0.2296 J/token against
// 0.2258 measured), now 0.2 % (0.2262). The band is the fit's alone (one
// run, no load repeated: the prediction says so) and is ±0.1 % wide.
func TestPredictEnergy(t *testing.T) {
	t.Parallel()
	target := "sim://tiny?gpus=2&idle_power_w=80&max_power_w=400"
	dir, _ := covRun(t, target, 64, [2]int{1, 12}, [2]int{2, 16}, [2]int{4, 24}, [2]int{8, 48})
	res, err := Calibrate([]string{dir}, Options{MaxNumSeqs: 8})
	if err != nil {
		t.Fatal(err)
	}
	twinPath := writeTwin(t, res)
	pred := predictAt(t, "sim://"+twinPath, twinPath, 6, 36, 64)
	if len(pred.Points) != 1 {
		t.Fatalf("points %+v", pred.Points)
	}
	pt := pred.Points[0]
	_, truth := covRun(t, target, 64, [2]int{6, 36})
	want := truth.Overall.Efficiency.JoulesPerToken
	t.Logf("predicted %.4f [%.4f, %.4f] J/token, measured %.4f (%s)", pt.Central.JoulesPerToken, pt.Low.JoulesPerToken, pt.High.JoulesPerToken, want, pt.Extrapolated)
	if pt.Central.JoulesPerToken <= 0 || relErr(pt.Central.JoulesPerToken, want) > 0.01 {
		t.Errorf("predicted %.4f J/token, measured %.4f", pt.Central.JoulesPerToken, want)
	}
	if pt.Extrapolated == "" && !(pt.Low.JoulesPerToken < pt.Central.JoulesPerToken && pt.High.JoulesPerToken > pt.Central.JoulesPerToken) {
		t.Errorf("no band: [%v, %v]", pt.Low.JoulesPerToken, pt.High.JoulesPerToken)
	}
}

// TestEnergyBandCoverageVirtual is issue 25's honesty rule for energy,
// deterministic like TestBandCoverageVirtual: the server is the
// simulator with its power model, in virtual time, its speed drawn anew
// for every run (every cost ×(1 + 12 % noise), every step ±10 %) and its
// GPUs' power too (idle and full batch ×(1 + 2 % noise): the same card
// draws differently from one start to the next). Each trial calibrates a
// twin from three runs at two concurrencies, predicts a third between
// them (2 from 1 and 4, or 6 from 2 and 8, by turns) and runs it once
// more on a fresh server: the truth. The predicted joules per token's
// 95 % band must hold the measured value in at least 90 % of the trials.
func TestEnergyBandCoverageVirtual(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("20 calibrations (deterministic: the race detector would only slow them)")
	}
	t.Parallel()
	const trials = 20
	held := 0
	for i := range trials {
		in, log := energyTrial(t, uint64(i))
		if in {
			held++
		}
		t.Log(log)
	}
	share := float64(held) / trials
	t.Logf("coverage: the 95 %% bands of joules per token held the measured value in %d of %d trials (%.1f %%)", held, trials, 100*share)
	if share < 0.90 {
		t.Errorf("coverage %.1f %% (%d of %d): below 90 %%", 100*share, held, trials)
	}
}

// energyTrial is one trial of TestEnergyBandCoverageVirtual.
func energyTrial(t *testing.T, seed uint64) (bool, string) {
	rng := rand.New(rand.NewPCG(seed, 25))
	server := func() string {
		s := math.Max(0.6, 1+0.12*rng.NormFloat64())
		p := 1 + 0.02*rng.NormFloat64()
		return fmt.Sprintf("sim://tiny?gpus=2&idle_power_w=%g&max_power_w=%g&seed=%d&jitter_frac=0.1&step_overhead_us=%g&per_seq_us=%g&per_kv_token_ns=%g&per_prefill_token_us=%g",
			90*p, 350*p, rng.Uint64()>>1, 1500*s, 50*s, 800*s, 4*s)
	}
	cal, held := [2][2]int{{1, 12}, {4, 24}}, [2]int{2, 16}
	if seed%2 == 1 {
		cal, held = [2][2]int{{2, 12}, {8, 32}}, [2]int{6, 24}
	}
	var dirs []string
	for range 3 {
		d, _ := covRun(t, server(), 48, cal[0], cal[1])
		dirs = append(dirs, d)
	}
	res, err := Calibrate(dirs, Options{MaxNumSeqs: 8})
	if err != nil {
		t.Fatal(err)
	}
	twinPath := writeTwin(t, res)
	pred := predictAt(t, "sim://"+twinPath, twinPath, held[0], held[1], 48)
	_, truth := covRun(t, server(), 48, held)
	p := pred.Points[0]
	if truth.Overall.Efficiency == nil || p.Central.JoulesPerToken <= 0 {
		t.Fatalf("trial %d: no energy: predicted %+v, measured %+v", seed, p.Central, truth.Overall.Efficiency)
	}
	tr := truth.Overall.Efficiency.JoulesPerToken
	lo, c, hi := p.Low.JoulesPerToken, p.Central.JoulesPerToken, p.High.JoulesPerToken
	in := lo <= tr && tr <= hi && hi > lo && p.Extrapolated == ""
	return in, fmt.Sprintf("trial %d (c%d from c%d, c%d): J/token %.4f [%.4f, %.4f] (±%.1f %%) measured %.4f (%+.1f %%) %v; stage miss %.2f %%; %s",
		seed, held[0], cal[0][0], cal[1][0], c, lo, hi, 50*(hi-lo)/c, tr, 100*(tr/c-1), in, 100*res.Config.Calibration.Power.StageMiss, p.Extrapolated)
}

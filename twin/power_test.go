package twin

import (
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
// the simulator that made the runs: within 5 %. (The band is the fit's
// uncertainty; on this run it is ±0.9 % and the truth lies 1.7 % below
// the central figure: the twin's own bias, which no band of the fit
// shows.)
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
	if pt.Central.JoulesPerToken <= 0 || relErr(pt.Central.JoulesPerToken, want) > 0.05 {
		t.Errorf("predicted %.4f J/token, measured %.4f", pt.Central.JoulesPerToken, want)
	}
	if pt.Extrapolated == "" && !(pt.Low.JoulesPerToken < pt.Central.JoulesPerToken && pt.High.JoulesPerToken > pt.Central.JoulesPerToken) {
		t.Errorf("no band: [%v, %v]", pt.Low.JoulesPerToken, pt.High.JoulesPerToken)
	}
}

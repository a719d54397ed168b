package results

import (
	"math"
	"testing"
	"time"
)

func gpuSample(target string, at time.Duration, v Values) Sample {
	return Sample{Target: target, At: at, OK: true, Reading: Reading{GPU: true, Snapshot: Snapshot{Values: v},
		Matched: map[Meaning]string{GPUEnergyJ: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", GPUPowerW: "DCGM_FI_DEV_POWER_USAGE"}}}
}

// TestEnergyOver: by the counter, read linearly between samples and past
// the last at the last interval's power; by integrated power when there
// is no counter; two sources summed; engine samples ignored.
func TestEnergyOver(t *testing.T) {
	t.Parallel()
	s := time.Second
	counter := []Sample{
		gpuSample("dcgm", 0, Values{GPUEnergyJ: 1000, GPUPowerW: 100}),
		gpuSample("dcgm", 1*s, Values{GPUEnergyJ: 1100, GPUPowerW: 100}),
		gpuSample("dcgm", 2*s, Values{GPUEnergyJ: 1400, GPUPowerW: 300}),
		{Target: "vllm", At: s, OK: true, Reading: Reading{Snapshot: Snapshot{Values: Values{GPUEnergyJ: 1e9}}}},
	}
	e, ok := EnergyOver(counter, s/2, 3*s)
	// 0.5 s at 100 W, 1 s at 300 W, 1 s beyond at 300 W.
	if !ok || math.Abs(e.Joules-650) > 1e-9 || e.Method != EnergyCounter || e.PeakPowerW != 300 || e.Samples != 2 {
		t.Errorf("counter: %+v %v, want 650 J by the counter, peak 300 W, 2 samples", e, ok)
	}
	if math.Abs(e.Coverage-0.6) > 1e-9 {
		t.Errorf("coverage %v, want 0.6 (1.5 s of 2.5 s bracketed)", e.Coverage)
	}
	power := []Sample{
		gpuSample("smi", 0, Values{GPUPowerW: 100}),
		gpuSample("smi", 2*s, Values{GPUPowerW: 300}),
	}
	e, ok = EnergyOver(power, 0, 2*s)
	if !ok || e.Joules != 400 || e.Method != EnergyPower || e.AvgPowerW != 200 {
		t.Errorf("power: %+v %v, want 400 J integrated, 200 W mean", e, ok)
	}
	e, ok = EnergyOver(append(counter, power...), 0, 2*s)
	if !ok || e.Joules != 800 || e.Method != EnergyPower || len(e.Targets) != 2 || e.PeakPowerW != 600 {
		t.Errorf("both: %+v %v, want 400 + 400 J, integrated power named, peak 300 + 300 W", e, ok)
	}
	if _, ok := EnergyOver(counter[3:], 0, 2*s); ok {
		t.Error("an engine's samples gave GPU energy")
	}
}

// TestEnergyOverReset: a GPU whose counter restarts counts from its new
// value, the others unaffected.
func TestEnergyOverReset(t *testing.T) {
	t.Parallel()
	mk := func(at time.Duration, a, b float64) Sample {
		s := gpuSample("dcgm", at, Values{GPUEnergyJ: a + b})
		s.Engines = map[string]Snapshot{"0": {Values: Values{GPUEnergyJ: a}}, "1": {Values: Values{GPUEnergyJ: b}}}
		return s
	}
	e, ok := EnergyOver([]Sample{mk(0, 500, 900), mk(time.Second, 600, 10)}, 0, time.Second)
	if !ok || e.Joules != 110 {
		t.Errorf("energy = %v %v, want 100 + 10 J", e.Joules, ok)
	}
}

// TestSpecDecodeOver reads vLLM's counters over a span, and SGLang's gauges.
func TestSpecDecodeOver(t *testing.T) {
	t.Parallel()
	mk := func(at time.Duration, drafts, tokens, acc float64, pos ...float64) Sample {
		return Sample{Target: "vllm", At: at, OK: true, Reading: Reading{
			Snapshot:       Snapshot{Values: Values{SpecDrafts: drafts, SpecDraftTokens: tokens, SpecAcceptedTokens: acc}},
			AcceptedPerPos: pos}}
	}
	s := time.Second
	pts := []Sample{mk(0, 100, 300, 150, 60, 50, 40), mk(s, 200, 600, 300, 120, 100, 80), mk(2*s, 1100, 3300, 1650, 660, 550, 440)}
	sd, ok := SpecDecodeOver(pts, s, 2*s)
	if !ok || sd.Drafts != 900 || sd.AcceptLength != 2.5 || sd.AcceptanceRate != 0.5 || sd.DraftLength != 3 {
		t.Errorf("counters: %+v %v", sd, ok)
	}
	if len(sd.PerPosition) != 3 || sd.PerPosition[0] != 0.6 || sd.PerPosition[2] != 0.4 {
		t.Errorf("per position = %v, want 0.6 0.5 0.4", sd.PerPosition)
	}
	g := Sample{Target: "sglang", At: s, OK: true, Reading: Reading{Snapshot: Snapshot{Values: Values{SpecAcceptLength: 2.9, SpecAcceptRate: 0.27}}}}
	sd, ok = SpecDecodeOver([]Sample{g}, 0, 2*s)
	if !ok || sd.Source != "gauges" || sd.AcceptLength != 2.9 || sd.AcceptanceRate != 0.27 {
		t.Errorf("gauges: %+v %v", sd, ok)
	}
	if _, ok := SpecDecodeOver([]Sample{{Target: "x", OK: true}}, 0, s); ok {
		t.Error("speculative decoding found on a page without it")
	}
}

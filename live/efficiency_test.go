package live

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/servebench/servebench/results"
)

// TestExporterEfficiency: GPU samples move the power gauge and the energy
// counter (by the energy counter, else by power integrated), engine
// samples the acceptance length, and the cost counter follows the price.
func TestExporterEfficiency(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e, err := New(reg, Run{Scenario: "s", Started: time.Now(), StageName: func(int) string { return "a" },
		Cost: &results.Cost{PerMTokInput: 1, PerMTokOutput: 2}})
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(target string, at time.Duration, v results.Values) *results.Sample {
		return &results.Sample{Target: target, At: at, OK: true, Reading: results.Reading{GPU: true, Snapshot: results.Snapshot{Values: v}}}
	}
	s := time.Second
	e.ObserveSample(gpu("dcgm", 0, results.Values{results.GPUPowerW: 300, results.GPUEnergyJ: 1000}))
	e.ObserveSample(gpu("dcgm", 2*s, results.Values{results.GPUPowerW: 500, results.GPUEnergyJ: 1900}))
	e.ObserveSample(gpu("smi", 0, results.Values{results.GPUPowerW: 100}))
	e.ObserveSample(gpu("smi", s, results.Values{results.GPUPowerW: 300}))
	engine := func(at time.Duration, drafts, acc float64) *results.Sample {
		return &results.Sample{Target: "vllm", At: at, OK: true, Reading: results.Reading{Snapshot: results.Snapshot{
			Values: results.Values{results.SpecDrafts: drafts, results.SpecAcceptedTokens: acc}}}}
	}
	e.ObserveSample(engine(0, 100, 150))
	e.ObserveSample(engine(s, 300, 550))
	r := okResult(1, 0, 20*time.Millisecond, false)
	e.Observe(&r)
	value := func(m prometheus.Metric) float64 {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		if d.Counter != nil {
			return d.Counter.GetValue()
		}
		return d.Gauge.GetValue()
	}
	for _, tc := range []struct {
		c    prometheus.Metric
		want float64
	}{
		{e.eff.power.WithLabelValues("dcgm"), 500},
		{e.eff.energy.WithLabelValues("dcgm"), 900}, // the counter's increase
		{e.eff.energy.WithLabelValues("smi"), 200},  // 1 s between 100 and 300 W
		{e.eff.accept, 3},                           // 1 + 400 / 200
	} {
		if got := value(tc.c); got != tc.want {
			t.Errorf("%v = %v, want %v", tc.c, got, tc.want)
		}
	}
	want := (float64(r.PromptTokens)*1 + float64(r.OutputTokens)*2) / 1e6
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := -1.0
	for _, f := range fams {
		if f.GetName() == MetricCost {
			got = f.Metric[0].Counter.GetValue()
		}
	}
	if got != want {
		t.Errorf("cost counter $%v, want $%v", got, want)
	}
}

package correlate

import (
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// TestGPUSeries reads per-GPU series from two sources: a DCGM page of
// two GPUs with the energy counter (power from the counter's increase,
// at each interval's middle; GPU 10 after GPU 2, by number) and a
// sampler of one GPU with a power gauge only (its aggregate, under the
// index its device has). A failed sample and the server's own pages are
// no GPU's.
func TestGPUSeries(t *testing.T) {
	t.Parallel()
	c := New()
	s := time.Second
	dcgm := func(at time.Duration, e2, e10 float64) results.Sample {
		return results.Sample{Target: "dcgm", At: at, OK: true, Reading: results.Reading{GPU: true,
			Engines: map[string]results.Snapshot{
				"10": {Values: results.Values{results.GPUEnergyJ: e10, results.GPUUtil: 0.5}},
				"2":  {Values: results.Values{results.GPUEnergyJ: e2}}},
			Devices: map[string]results.Device{"2": {UUID: "GPU-b"}, "10": {UUID: "GPU-a"}}}}
	}
	smi := func(at time.Duration, w float64) results.Sample {
		return results.Sample{Target: "nvidia-smi", At: at, OK: true, Reading: results.Reading{GPU: true,
			Snapshot: results.Snapshot{Values: results.Values{results.GPUPowerW: w}},
			Devices:  map[string]results.Device{"3": {UUID: "GPU-c"}}}}
	}
	c.AddSample(dcgm(0, 1000, 5000))
	c.AddSample(smi(0, 90))
	c.AddSample(results.Sample{Target: "server", At: s, OK: true, Reading: results.Reading{Snapshot: results.Snapshot{Values: results.Values{results.GPUPowerW: 1}}}})
	c.AddSample(dcgm(2*s, 1400, 5100))
	c.AddSample(results.Sample{Target: "dcgm", At: 3 * s, Error: "timeout"})
	c.AddSample(smi(2*s, 250))
	got := c.GPUSeries()
	if len(got) != 3 {
		t.Fatalf("%d series, want 3: %+v", len(got), got)
	}
	want := []struct {
		src, key, uuid string
		power          []GPUPoint
		util           int
	}{
		{"dcgm", "2", "GPU-b", []GPUPoint{{At: s, V: 200}}, 0},
		{"dcgm", "10", "GPU-a", []GPUPoint{{At: s, V: 50}}, 2},
		{"nvidia-smi", "3", "GPU-c", []GPUPoint{{At: 0, V: 90}, {At: 2 * s, V: 250}}, 0},
	}
	for i, w := range want {
		g := got[i]
		if g.Source != w.src || g.Key != w.key || g.UUID != w.uuid || len(g.Util) != w.util || len(g.Power) != len(w.power) {
			t.Errorf("series %d: %+v; want %+v", i, g, w)
			continue
		}
		for j, p := range w.power {
			if g.Power[j] != p {
				t.Errorf("series %d power[%d] = %+v, want %+v", i, j, g.Power[j], p)
			}
		}
	}
	if New().GPUSeries() != nil {
		t.Error("series without GPU telemetry")
	}
}

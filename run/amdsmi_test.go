//go:build unix

package run

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/report"
	"github.com/servebench/servebench/results"
)

// fakeAMDSMI stands in for amd-smi: two GPUs drawing 150 W and 250 W, in
// amd-smi 26's JSON.
const fakeAMDSMI = `#!/bin/sh
cat <<'JSON'
{"gpu_data": [
 {"gpu": 0, "usage": {"gfx_activity": {"value": 80, "unit": "%"}, "umc_activity": {"value": 30, "unit": "%"}},
  "power": {"socket_power": {"value": 150, "unit": "W"}}, "mem_usage": {"used_vram": {"value": 4096, "unit": "MB"}}},
 {"gpu": 1, "usage": {"gfx_activity": {"value": 60, "unit": "%"}, "umc_activity": {"value": 20, "unit": "%"}},
  "power": {"socket_power": {"value": 250, "unit": "W"}}, "mem_usage": {"used_vram": {"value": 4096, "unit": "MB"}}}
]}
JSON
`

// TestAMDSMISamplerRun runs the simulator with scrape.gpu.sampler:
// amd-smi, a fake amd-smi first on PATH: the run reports its energy
// figures from it (the power integrated, 400 W over the window, per
// output token), as with nvidia-smi; and the same run without a GPU
// source says energy was not measured, never 0. Not parallel: it sets
// PATH.
func TestAMDSMISamplerRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "amd-smi"), []byte(fakeAMDSMI), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	doc := `name: amd
target: {url: "sim://tiny"}
request: {ignore_eos: true, include_usage: true}
prompts: {input_tokens: 64, output_tokens: 32}
scrape: {interval: 100ms, gpu: {sampler: amd-smi}}
load: {stages: [{concurrency: 4, duration: 1500ms}]}
`
	sum, err := Run(context.Background(), parse(t, doc), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e := sum.Overall.Efficiency
	if e == nil || e.Energy == nil {
		t.Fatalf("efficiency %+v: no energy from the amd-smi sampler; warnings %q", e, sum.Warnings)
	}
	for _, w := range sum.Warnings {
		if strings.Contains(w, "gpu") || strings.Contains(w, "amd-smi") {
			t.Errorf("warning from the GPU sampler: %s", w)
		}
	}
	en := e.Energy
	if en.Method != results.EnergyPower || en.Source != "amd-smi power.socket_power" || en.GPUs != 2 || en.Samples < 2 {
		t.Errorf("energy %+v: want the power of 2 GPUs integrated from amd-smi's socket_power", en)
	}
	if math.Abs(en.AvgPowerW-400) > 1e-6 || en.PeakPowerW != 400 {
		t.Errorf("mean power %v W, peak %v W; want 400 W throughout", en.AvgPowerW, en.PeakPowerW)
	}
	out := float64(sum.Overall.Tokens.Output)
	if out == 0 || math.Abs(e.JoulesPerToken-en.Joules/out) > 1e-6*e.JoulesPerToken+1e-6 {
		t.Errorf("%v J per token, want %v J over %v output tokens", e.JoulesPerToken, en.Joules, out)
	}
	// A window's power needs samples bracketing it whole, which the
	// run's first and last windows may lack: utilisation is the check.
	if g := sum.Correlation.GPU; g == nil || g.Util == nil || !near(*g.Util, 0.7) || g.GPUs != 2 || (g.PowerW != nil && !near(*g.PowerW, 400)) {
		t.Errorf("correlation's GPU = %+v, want utilisation 0.7 of 2 GPUs on the timeline (and 400 W where it has power)", g)
	}
	doc = strings.Replace(doc, ", gpu: {sampler: amd-smi}", "", 1)
	doc = strings.Replace(doc, "duration: 1500ms", "requests: 8", 1)
	sum, err = Run(context.Background(), parse(t, doc), Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if e := sum.Overall.Efficiency; e == nil || e.Energy != nil || e.EnergyNote != report.NoTelemetry || e.JoulesPerToken != 0 {
		t.Errorf("without a GPU source: %+v, want energy %q", e, report.NoTelemetry)
	}
}

// TestGPUFileAMDSMI reads what amd-smi's watch mode wrote, banner and
// all, placed on the run's timeline by its Unix timestamps, and still an
// nvidia-smi CSV as before: the content says which.
func TestGPUFileAMDSMI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "gpu.json")
	watch := "'CTRL' + 'C' to stop watching output:\n" +
		`[{"timestamp": 1700000001, "gpu": 0, "power": {"socket_power": {"value": 100, "unit": "W"}}},
		  {"timestamp": 1700000001, "gpu": 1, "power": {"socket_power": {"value": 120, "unit": "W"}}}]` + "\n" +
		`[{"timestamp": 1700000002, "gpu": 0, "power": {"socket_power": {"value": 300, "unit": "W"}}},
		  {"timestamp": 1700000002, "gpu": 1, "power": {"socket_power": {"value": 320, "unit": "W"}}}]` + "\n"
	if err := os.WriteFile(path, []byte(watch), 0o644); err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(1700000000, 0)
	records := make(chan results.Record, 16)
	if err := readGPUFile(path, epoch, []string{"1"}, records); err != nil {
		t.Fatal(err)
	}
	close(records)
	var at []time.Duration
	var pw []float64
	for r := range records {
		at, pw = append(at, r.Sample.At), append(pw, r.Sample.Values[results.GPUPowerW])
	}
	if len(at) != 2 || at[0] != time.Second || at[1] != 2*time.Second || pw[0] != 120 || pw[1] != 320 {
		t.Errorf("samples at %v with power %v; want GPU 1's 120 W at 1 s and 320 W at 2 s", at, pw)
	}

	records = make(chan results.Record, 16)
	csv := filepath.Join("..", "scrape", "testdata", "nvidia-smi_h100_590.csv")
	if err := readGPUFile(csv, epoch, nil, records); err != nil {
		t.Fatal(err)
	}
	close(records)
	if n := len(records); n != 2 {
		t.Errorf("nvidia-smi CSV: %d samples, want 2", n)
	}
	if err := os.WriteFile(path, []byte(`[{"gpu": 0, "power": {"socket_power": 5}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := readGPUFile(path, epoch, nil, make(chan results.Record, 16))
	if err == nil || !strings.Contains(err.Error(), "has no timestamp (write the file with amd-smi metric -w N --json") {
		t.Errorf("a file without timestamps: %v", err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

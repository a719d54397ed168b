//go:build unix

package scrape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
)

// fakeAMDSMI is a stand-in for amd-smi, written to a directory put on the
// sampler's PATH. Each run records its arguments and pid, counts itself,
// starts a child that sleeps (which must go with it) and prints two GPUs'
// `amd-smi metric --json` entries in amd-smi 26's shape, GPU 0's power
// rising by 1 W a run. With "hang" it sleeps instead of answering (and
// with "ignore-int" ignores the interrupt), with "fail" it exits 1 with
// an error message, with "garbage" it prints text that is not JSON.
const fakeAMDSMI = `#!/bin/sh
dir=$(dirname "$0")
echo "$@" > "$dir/args"
echo $$ > "$dir/pid"
n=$(cat "$dir/runs" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$dir/runs"
if [ -e "$dir/ignore-int" ]; then trap '' INT; fi
sleep 600 &
echo $! > "$dir/child"
if [ -e "$dir/hang" ]; then sleep 600; wait; fi
kill $! 2>/dev/null
if [ -e "$dir/fail" ]; then echo "AMD-SMI Command 'metric' is invalid. Error code: -10" >&2; exit 1; fi
if [ -e "$dir/garbage" ]; then echo "ERROR:root:Unable to detect any GPU devices"; exit 0; fi
cat <<JSON
{"gpu_data": [
 {"gpu": 0, "usage": {"gfx_activity": {"value": 90, "unit": "%"}, "umc_activity": {"value": 40, "unit": "%"}},
  "power": {"socket_power": {"value": $((300 + n)), "unit": "W"}}, "mem_usage": {"used_vram": {"value": 1000, "unit": "MB"}}},
 {"gpu": 1, "usage": {"gfx_activity": {"value": 50, "unit": "%"}, "umc_activity": "N/A"},
  "power": {"socket_power": {"value": 200, "unit": "W"}}, "mem_usage": {"used_vram": {"value": 2000, "unit": "MB"}}}
]}
JSON
`

func writeFakeAMD(t *testing.T, flags ...string) string {
	t.Helper()
	return writeFakeTool(t, "amd-smi", fakeAMDSMI, flags...)
}

// amdSampler starts a sampler of the fake in dir with cfg; the epoch is
// now, so the samples fall after it.
func amdSampler(t *testing.T, dir string, cfg SamplerConfig) *Sampler {
	t.Helper()
	cfg.Tool, cfg.Path, cfg.Epoch = "amd-smi", dir, time.Now()
	if cfg.Interval == 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	s, err := NewSampler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAMDSamplerFake runs a fake amd-smi found on the sampler's PATH once
// per interval: its arguments, its output as samples on the run's
// timeline in order (each at the middle of its run of amd-smi), and no
// process left when the run ends.
func TestAMDSamplerFake(t *testing.T) {
	t.Parallel()
	dir := writeFakeAMD(t)
	s := amdSampler(t, dir, SamplerConfig{})
	got, _ := runSampler(t, s, 3, nil)
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if strings.TrimSpace(string(args)) != "metric --power --usage --mem-usage --json" {
		t.Errorf("args %q", args)
	}
	for i, smp := range got.s[:3] {
		v := smp.Values
		if smp.Index != uint64(i) || !smp.OK || !smp.GPU || smp.Target != "amd-smi" || smp.At <= 0 || (i > 0 && smp.At <= got.s[i-1].At) ||
			smp.Duration <= 0 || smp.At != smp.Start+smp.Duration/2 {
			t.Errorf("sample %d: index %d start %v at %v took %v ok %v gpu %v target %q; want at the middle of amd-smi's run", i, smp.Index, smp.Start, smp.At, smp.Duration, smp.OK, smp.GPU, smp.Target)
		}
		if v[results.GPUPowerW] != float64(300+i+1+200) || v[results.GPUMemUsedBytes] != 3000<<20 || !near(v[results.GPUUtil], 0.7) {
			t.Errorf("sample %d values = %v", i, v)
		}
		if _, ok := v[results.GPUDRAMActive]; ok || smp.Engines["0"].Values[results.GPUDRAMActive] != 0.4 {
			t.Errorf("sample %d: memory activity %v, GPU 0's %v; want none overall (GPU 1 N/A), 0.4 on GPU 0", i, v, smp.Engines["0"].Values)
		}
	}
	if pid, child := pidOf(t, dir, "pid"), pidOf(t, dir, "child"); !gone(pid) || !gone(child) {
		t.Errorf("after the run: amd-smi %d gone %v, its child %d gone %v", pid, gone(pid), child, gone(child))
	}
	if w := s.Warnings(); len(w) != 0 {
		t.Errorf("warnings: %v", w)
	}
}

// TestAMDSamplerKillsStubborn: an amd-smi run that hangs and ignores the
// interrupt when the run ends is killed StopTimeout later, its child too.
func TestAMDSamplerKillsStubborn(t *testing.T) {
	t.Parallel()
	dir := writeFakeAMD(t, "hang", "ignore-int")
	s := amdSampler(t, dir, SamplerConfig{StopTimeout: 300 * time.Millisecond})
	started := func() bool { _, err := os.Stat(filepath.Join(dir, "child")); return err == nil }
	got, took := runSampler(t, s, 1, started)
	if got.n() != 0 {
		t.Errorf("%d samples from a hung amd-smi", got.n())
	}
	if pid, child := pidOf(t, dir, "pid"), pidOf(t, dir, "child"); !gone(pid) || !gone(child) {
		t.Errorf("amd-smi %d gone %v, child %d gone %v", pid, gone(pid), child, gone(child))
	}
	if took < 300*time.Millisecond {
		t.Errorf("Run returned %v after the run ended, before the stop timeout: was it killed?", took)
	}
	if w := s.Warnings(); len(w) != 0 {
		t.Errorf("a run stopped with the run is no failure; warnings: %v", w)
	}
}

// TestAMDSamplerPollTimeout: a run that outlasts PollTimeout is stopped
// and counts as failed; three in a row end the sampler, saying why.
func TestAMDSamplerPollTimeout(t *testing.T) {
	t.Parallel()
	dir := writeFakeAMD(t, "hang")
	s := amdSampler(t, dir, SamplerConfig{PollTimeout: 200 * time.Millisecond, StopTimeout: 100 * time.Millisecond})
	_, took := runSampler(t, s, 1, nil)
	if took != 0 {
		t.Fatal("the sampler ran until the run ended, past three failed runs")
	}
	w := s.Warnings()
	if len(w) != 2 || !strings.Contains(w[0].Error(), "stopped after 3 failed runs in a row") ||
		!strings.Contains(w[1].Error(), "3 of 3 runs failed, the first: amd-smi ran longer than 200ms") {
		t.Errorf("warnings = %v", w)
	}
	if !gone(pidOf(t, dir, "pid")) || !gone(pidOf(t, dir, "child")) {
		t.Error("a timed-out amd-smi or its child still runs")
	}
}

// TestAMDSamplerFailures: amd-smi that fails, or prints no JSON, is a
// warning that quotes it.
func TestAMDSamplerFailures(t *testing.T) {
	t.Parallel()
	for flag, want := range map[string]string{
		"fail":    "amd-smi: exit status 1: AMD-SMI Command 'metric' is invalid",
		"garbage": "no JSON document in the output: ERROR:root:Unable to detect any GPU devices",
	} {
		s := amdSampler(t, writeFakeAMD(t, flag), SamplerConfig{Interval: MinInterval})
		runSampler(t, s, 1, nil)
		if w := s.Warnings(); len(w) != 2 || !strings.Contains(w[1].Error(), want) {
			t.Errorf("%s: warnings = %v, want one with %q", flag, w, want)
		}
	}
}

// TestAMDSamplerBounded: MaxSamples stops the sampler without the run
// ending; GPUs keeps only the GPUs asked for.
func TestAMDSamplerBounded(t *testing.T) {
	t.Parallel()
	dir := writeFakeAMD(t)
	s := amdSampler(t, dir, SamplerConfig{MaxSamples: 2, GPUs: []string{"1"}, Interval: MinInterval})
	got, took := runSampler(t, s, 1000, nil)
	if got.n() != 2 || took != 0 {
		t.Errorf("%d samples, ran until the run ended %v; want 2, stopping by itself", got.n(), took != 0)
	}
	if got.n() > 0 && (got.s[0].Values[results.GPUPowerW] != 200 || len(got.s[0].Devices) != 1) {
		t.Errorf("GPU 1 only: %v", got.s[0].Values)
	}
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0].Error(), "stopped after 2 samples") {
		t.Errorf("warnings = %v", w)
	}
}

// TestAMDSamplerMissing: no amd-smi on the PATH fails at once, naming it;
// an unknown tool is refused.
func TestAMDSamplerMissing(t *testing.T) {
	t.Parallel()
	_, err := NewSampler(SamplerConfig{Tool: "amd-smi", Path: t.TempDir(), Epoch: epoch})
	if err == nil || !strings.Contains(err.Error(), "amd-smi not found on PATH") {
		t.Errorf("err = %v", err)
	}
	_, err = NewSampler(SamplerConfig{Tool: "rocm-smi", Path: t.TempDir(), Epoch: epoch})
	if err == nil || !strings.Contains(err.Error(), `want nvidia-smi or amd-smi, got "rocm-smi"`) {
		t.Errorf("err = %v", err)
	}
}

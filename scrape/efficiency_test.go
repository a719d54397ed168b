package scrape

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// TestParseDCGM reads a DCGM exporter page of four GPUs (testdata/SOURCES.md)
// into per-GPU series in the meanings' units, and restricts it to one pod's
// GPUs.
func TestParseDCGM(t *testing.T) {
	t.Parallel()
	rd := parseFile(t, "dcgm_4gpu_k8s.prom", profile.DCGM)
	if !rd.GPU || len(rd.Engines) != 4 || len(rd.Devices) != 4 {
		t.Fatalf("reading: gpu %v, %d engines, %d devices; want a GPU reading of 4", rd.GPU, len(rd.Engines), len(rd.Devices))
	}
	want := results.Values{
		results.GPUPowerW:       612.402 + 598.117 + 455.730 + 69.851,
		results.GPUEnergyJ:      (431077012345.0 + 428911007711 + 390012334401 + 102330011220) / 1000,
		results.GPUUtil:         (1 + 1 + 0.97 + 0) / 4,
		results.GPUDRAMActive:   (0.742101 + 0.731996 + 0.668211) / 4,
		results.GPUMemUsedBytes: (74363.0 + 74357 + 70677) * (1 << 20),
		results.GPUSMClockMHz:   (1980.0 + 1980 + 1755 + 210) / 4,
	}
	for m, v := range want {
		if got, ok := rd.Values[m]; !ok || !near(got, v) {
			t.Errorf("%s = %v (present %v), want %v", m, got, ok, v)
		}
	}
	if got := rd.Engines["2"].Values[results.GPUPowerW]; !near(got, 455.730) {
		t.Errorf("GPU 2 power = %v, want 455.73", got)
	}
	if rd.Matched[results.GPUDRAMActive] != "DCGM_FI_PROF_DRAM_ACTIVE" {
		t.Errorf("DRAM activity read from %q, want the DCP ratio first", rd.Matched[results.GPUDRAMActive])
	}
	if d := rd.Devices["0"]; d.Pod != "vllm-llama-0" || d.Namespace != "llm-serving" || d.Model != "NVIDIA H100 80GB HBM3" || d.UUID == "" || d.Host != "gpu-node-7" {
		t.Errorf("device 0 = %+v", d)
	}
	// SM activity is commented out in the exporter's default files.
	if slices.Contains(rd.Missing(), results.GPUSMActive) == false {
		t.Errorf("missing = %v, want gpu_sm_active among them", rd.Missing())
	}

	f, err := os.Open(filepath.Join("testdata", "dcgm_4gpu_k8s.prom"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := NewParser()
	p.Only("pod", "vllm-llama-0")
	pod, err := p.Parse(f, profile.DCGM)
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Engines) != 2 || !near(pod.Values[results.GPUPowerW], 612.402+598.117) {
		t.Errorf("pod vllm-llama-0: %d GPUs, %v W; want GPUs 0 and 1, 1210.519 W", len(pod.Engines), pod.Values[results.GPUPowerW])
	}
}

// TestParseSpecDecode reads vLLM's speculative-decoding counters, the
// per-position one by its position label.
func TestParseSpecDecode(t *testing.T) {
	t.Parallel()
	rd := parseFile(t, "vllm_v1_specdecode.prom", "")
	for m, v := range map[results.Meaning]float64{results.SpecDrafts: 41210, results.SpecDraftTokens: 123630, results.SpecAcceptedTokens: 86911} {
		if got := rd.Values[m]; got != v {
			t.Errorf("%s = %v, want %v", m, got, v)
		}
	}
	if !slices.Equal(rd.AcceptedPerPos, []float64{35023, 28870, 23018}) {
		t.Errorf("per position = %v", rd.AcceptedPerPos)
	}
	if slices.Contains(parseFile(t, "vllm_v1.prom", "").Missing(), results.SpecDrafts) {
		t.Error("a page without a draft reports the spec-decode counters missing")
	}
}

func readSMI(t *testing.T, r io.Reader, loc *time.Location) ([]time.Time, []results.Reading) {
	t.Helper()
	sr, err := NewSMIReader(r, loc)
	if err != nil {
		t.Fatal(err)
	}
	var ats []time.Time
	var rds []results.Reading
	for {
		at, rd, err := sr.Next()
		if errors.Is(err, io.EOF) {
			return ats, rds
		}
		if err != nil {
			t.Fatal(err)
		}
		ats, rds = append(ats, at), append(rds, rd)
	}
}

// TestSMIGolden reads real nvidia-smi CSV output (an H100 idle, then
// loaded; testdata/SOURCES.md), units and "[N/A]" cells included.
func TestSMIGolden(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "nvidia-smi_h100_590.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ats, rds := readSMI(t, f, time.UTC)
	if len(rds) != 2 {
		t.Fatalf("%d samples, want 2", len(rds))
	}
	if got := ats[1].Sub(ats[0]); got != 14657*time.Millisecond {
		t.Errorf("samples %v apart, want 14.657s", got)
	}
	load := rds[1].Values
	for m, v := range map[results.Meaning]float64{results.GPUPowerW: 631.95, results.GPUPowerLimitW: 700, results.GPUUtil: 1,
		results.GPUDRAMActive: 0.11, results.GPUMemUsedBytes: 19818 << 20, results.GPUSMClockMHz: 1980, results.GPUPowerCapped: 0} {
		if got, ok := load[m]; !ok || !near(got, v) {
			t.Errorf("loaded %s = %v (present %v), want %v", m, got, ok, v)
		}
	}
	if rds[0].Values[results.GPUPowerW] != 69.85 {
		t.Errorf("idle power = %v, want 69.85", rds[0].Values[results.GPUPowerW])
	}
	out, err := json.MarshalIndent(rds, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenCheck(t, append(out, '\n'))
}

// TestSMIPowerCapGolden reads the sampler's own query as a real H100
// answered it (driver 580, nounits, -lms 250) while a matmul loop held it
// at its power limit: twelve samples a quarter second apart, power
// rising to the limit, the software power cap "Active" read as 1.
func TestSMIPowerCapGolden(t *testing.T) {
	t.Parallel()
	f, err := os.Open(filepath.Join("testdata", "nvidia-smi_h100_580_powercap.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ats, rds := readSMI(t, f, time.UTC)
	if len(rds) != 12 {
		t.Fatalf("%d samples, want 12", len(rds))
	}
	if got := ats[11].Sub(ats[0]); got != 2762*time.Millisecond {
		t.Errorf("samples span %v, want 2.762s", got)
	}
	first, last := rds[0].Values, rds[11].Values
	for m, v := range map[results.Meaning]float64{results.GPUPowerW: 356.53, results.GPUPowerLimitW: 700, results.GPUUtil: 0.97,
		results.GPUDRAMActive: 0.33, results.GPUMemUsedBytes: 975 << 20, results.GPUSMClockMHz: 1560, results.GPUPowerCapped: 1} {
		if got, ok := first[m]; !ok || !near(got, v) {
			t.Errorf("first sample's %s = %v (present %v), want %v", m, got, ok, v)
		}
	}
	if last[results.GPUPowerW] != 692.91 || last[results.GPUPowerCapped] != 1 {
		t.Errorf("last sample: power %v, capped %v; want 692.91 W, capped", last[results.GPUPowerW], last[results.GPUPowerCapped])
	}
}

// TestSMIGroups: with several GPUs and -lms looping, a sample is one row
// per GPU; without units the fields' own units apply; Only keeps some GPUs.
func TestSMIGroups(t *testing.T) {
	t.Parallel()
	csv := "timestamp, index, uuid, name, power.draw, utilization.gpu, memory.used\n" +
		"2025/01/02 03:04:05.100, 0, GPU-a, NVIDIA H100, 300.5, 90, 1000\n" +
		"2025/01/02 03:04:05.101, 1, GPU-b, NVIDIA H100, 200.5, 50, 2000\n" +
		"2025/01/02 03:04:05.600, 0, GPU-a, NVIDIA H100, 310.0, 100, 1000\n" +
		"2025/01/02 03:04:05.601, 1, GPU-b, NVIDIA H100, [N/A], 70, 2000\n"
	_, rds := readSMI(t, strings.NewReader(csv), time.UTC)
	if len(rds) != 2 {
		t.Fatalf("%d samples, want 2", len(rds))
	}
	if v := rds[0].Values; v[results.GPUPowerW] != 501 || v[results.GPUUtil] != 0.7 || v[results.GPUMemUsedBytes] != 3000<<20 {
		t.Errorf("first sample = %v", v)
	}
	if _, ok := rds[1].Values[results.GPUPowerW]; ok {
		t.Errorf("power summed over GPUs when one read [N/A]: %v", rds[1].Values)
	}
	if rds[1].Engines["0"].Values[results.GPUPowerW] != 310 {
		t.Errorf("GPU 0's own power lost: %v", rds[1].Engines)
	}
	sr, err := NewSMIReader(strings.NewReader(csv), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	sr.Only("1")
	_, rd, err := sr.Next()
	if err != nil || rd.Values[results.GPUPowerW] != 200.5 {
		t.Errorf("GPU 1 only: %v, %v", rd.Values, err)
	}
}

// TestSMIErrors: a header without the columns to place rows, a bad row.
func TestSMIErrors(t *testing.T) {
	t.Parallel()
	if _, err := NewSMIReader(strings.NewReader("name, power.draw [W]\n"), nil); err == nil || !strings.Contains(err.Error(), "timestamp and index") {
		t.Errorf("header without timestamp: %v", err)
	}
	sr, err := NewSMIReader(strings.NewReader("timestamp, index\nyesterday, 0\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sr.Next(); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad timestamp: %v, want an error naming line 2", err)
	}
}

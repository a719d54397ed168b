package scrape

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAMDSMIGolden parses each real amd-smi output kept in testdata
// (SOURCES.md): the {value, unit} objects of ROCm 6.1 and later, the
// gpu_data wrapper of amd-smi 26, per-GPU documents, lists per engine
// and "N/A" left unknown. The readings are kept as a golden file.
func TestAMDSMIGolden(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file string
		gpus int
		want map[results.Meaning]float64
	}{
		{"amd-smi_rocm6.1_changelog_power.json", 1, map[results.Meaning]float64{results.GPUPowerW: 10}},
		{"amd-smi_w7700_usage.json", 1, map[results.Meaning]float64{results.GPUUtil: 0.42, results.GPUDRAMActive: 0.01}},
		{"amd-smi_rx7800xt_power.json", 1, map[results.Meaning]float64{results.GPUPowerW: 9}},
		{"amd-smi_r9700_2gpu_usage.json", 2, map[results.Meaning]float64{results.GPUUtil: 1, results.GPUDRAMActive: 0}},
		{"amd-smi_watch_strixhalo_na.txt", 1, map[results.Meaning]float64{}},
	}
	var all []results.Reading
	for _, c := range cases {
		rd, err := ParseAMDSMI(readTestdata(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if rd.Profile != profile.AMDSMI || !rd.GPU || len(rd.Devices) != c.gpus {
			t.Errorf("%s: profile %q gpu %v, %d GPUs; want amd-smi, a GPU reading, %d GPUs", c.file, rd.Profile, rd.GPU, len(rd.Devices), c.gpus)
		}
		if len(rd.Values) != len(c.want) {
			t.Errorf("%s: values %v, want exactly %v", c.file, rd.Values, c.want)
		}
		for m, v := range c.want {
			if got, ok := rd.Values[m]; !ok || !near(got, v) {
				t.Errorf("%s: %s = %v (present %v), want %v", c.file, m, got, ok, v)
			}
		}
		all = append(all, rd)
	}
	if got := all[0].Matched[results.GPUPowerW]; got != "amd-smi power.socket_power" {
		t.Errorf("power matched %q, want amd-smi power.socket_power", got)
	}
	if e := all[3].Engines; e["0"].Values[results.GPUUtil] != 1 || e["1"].Values[results.GPUUtil] != 1 {
		t.Errorf("per-GPU utilisation of the two R9700s: %v", e)
	}
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	goldenCheck(t, append(out, '\n'))
}

// TestAMDSMIWatchFile reads the real watch-mode output as a file: its
// banner skipped, its entry placed at its Unix timestamp.
func TestAMDSMIWatchFile(t *testing.T) {
	t.Parallel()
	a := NewAMDSMIReader(strings.NewReader(string(readTestdata(t, "amd-smi_watch_strixhalo_na.txt"))))
	at, rd, err := a.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !at.Equal(time.Unix(1769014607, 0)) || len(rd.Values) != 0 || !rd.GPU {
		t.Errorf("at %v, values %v; want 1769014607 and none (every value N/A)", at.UTC(), rd.Values)
	}
	if _, _, err := a.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the only sample: %v, want io.EOF", err)
	}
}

// TestAMDSMIShapes: the value shapes amd-smi releases have written, on
// several GPUs in one list, with preferences among fields.
func TestAMDSMIShapes(t *testing.T) {
	t.Parallel()
	out := `WARNING: User is missing the following required groups: render, video
[
 {"gpu": 0, "power": {"socket_power": "N/A", "average_socket_power": {"value": 94, "unit": "W"}},
  "usage": {"gfx_activity": {"value": 55, "unit": "%"}, "umc_activity": "30 %", "vcn_activity": [{"value": 7, "unit": "%"}, "N/A"]},
  "mem_usage": {"used_vram": {"value": 2048, "unit": "MB"}, "total_vram": {"value": 65520, "unit": "MB"}}},
 {"gpu": 1, "power": {"current_power": 300, "power_limit": 560}, "usage": {"gfx_usage": 90, "mem_usage": 45},
  "mem_usage": {"used_vram": 1024}},
 {"gpu": 2, "power": {"socket_power": "20 W"}, "usage": "N/A", "mem_usage": {"used_vram": {"value": 1, "unit": "GB"}}}
]`
	rd, err := ParseAMDSMI([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	e := rd.Engines
	for gpu, want := range map[string]results.Values{
		"0": {results.GPUPowerW: 94, results.GPUUtil: 0.55, results.GPUDRAMActive: 0.30, results.GPUMemUsedBytes: 2048 << 20},
		"1": {results.GPUPowerW: 300, results.GPUPowerLimitW: 560, results.GPUUtil: 0.9, results.GPUDRAMActive: 0.45, results.GPUMemUsedBytes: 1024 << 20},
		"2": {results.GPUPowerW: 20, results.GPUMemUsedBytes: 1 << 30},
	} {
		got := e[gpu].Values
		if len(got) != len(want) {
			t.Errorf("GPU %s: %v, want %v", gpu, got, want)
		}
		for m, v := range want {
			if !near(got[m], v) {
				t.Errorf("GPU %s: %s = %v, want %v", gpu, m, got[m], v)
			}
		}
	}
	if v := rd.Values; v[results.GPUPowerW] != 414 || v[results.GPUMemUsedBytes] != 3072<<20+1<<30 {
		t.Errorf("sums over GPUs: %v", v)
	}
	if _, ok := rd.Values[results.GPUUtil]; ok {
		t.Errorf("utilisation averaged over GPUs though GPU 2 has none: %v", rd.Values)
	}
	only, err := ParseAMDSMI([]byte(out), "1")
	if err != nil || len(only.Devices) != 1 || only.Values[results.GPUPowerW] != 300 {
		t.Errorf("GPU 1 only: %v, %v", only.Values, err)
	}
}

// TestAMDSMIErrors: output that is not amd-smi's JSON fails, naming the
// document and what is wrong.
func TestAMDSMIErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ out, want string }{
		{"", "no JSON document"},
		{"amd-smi: command not found\n", "no JSON document in the output: amd-smi: command not found"},
		{`[{"power": {}}]`, "document 1: entry 1: gpu: want the GPU's index"},
		{`[{"gpu": -1}]`, "gpu: want the GPU's index, got -1"},
		{`{"gpu_data": [{"gpu": 0}]} {"gpu_data": [{"gpu": 0}]}`, "GPU 0 a second time"},
		{`{"devices": []}`, "neither gpu_data nor gpu"},
		{`[{"gpu": 0, "timestamp": "yesterday"}]`, "timestamp: want Unix seconds"},
		{`[{"gpu": 0}`, "document 1"},
		{`[{"gpu": 3}]`, "no entry for the GPUs asked for"},
	} {
		_, err := ParseAMDSMI([]byte(c.out), "0", "1") // GPU 3 is not asked for
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.out, err, c.want)
		}
	}
	a := NewAMDSMIReader(strings.NewReader(`[{"gpu": 0, "power": {"socket_power": 5}}]`))
	if _, _, err := a.Next(); err == nil || !strings.Contains(err.Error(), "no timestamp") {
		t.Errorf("a file without timestamps: %v", err)
	}
}

// TestAMDSMIReaderGroups: watch-mode documents, and per-GPU documents,
// group into one sample per timestamp; Only keeps some GPUs.
func TestAMDSMIReaderGroups(t *testing.T) {
	t.Parallel()
	in := "'CTRL' + 'C' to stop watching output:\n" +
		`[{"timestamp": 1700000000, "gpu": 0, "power": {"socket_power": {"value": 100, "unit": "W"}}},
		  {"timestamp": 1700000000, "gpu": 1, "power": {"socket_power": {"value": 200, "unit": "W"}}}]` + "\n" +
		`{"gpu_data": [{"timestamp": 1700000001.5, "gpu": 0, "power": {"socket_power": {"value": 110, "unit": "W"}}}]}` + "\n" +
		`{"gpu_data": [{"timestamp": 1700000001.5, "gpu": 1, "power": {"socket_power": {"value": 210, "unit": "W"}}}]}` + "\n"
	a := NewAMDSMIReader(strings.NewReader(in))
	var ats []time.Time
	var pw []float64
	for {
		at, rd, err := a.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ats, pw = append(ats, at), append(pw, rd.Values[results.GPUPowerW])
	}
	if len(pw) != 2 || pw[0] != 300 || pw[1] != 320 || ats[1].Sub(ats[0]) != 1500*time.Millisecond {
		t.Errorf("samples at %v with power %v; want two, 1.5 s apart, 300 W then 320 W", ats, pw)
	}
	a = NewAMDSMIReader(strings.NewReader(in))
	a.Only("1")
	if _, rd, err := a.Next(); err != nil || rd.Values[results.GPUPowerW] != 200 {
		t.Errorf("GPU 1 only: %v, %v", rd.Values, err)
	}
}

// TestAMDSMIWarningLines: lines amd-smi or Python print around the JSON,
// bracketed ones too, are skipped; a document that opens and breaks is
// an error.
func TestAMDSMIWarningLines(t *testing.T) {
	t.Parallel()
	out := "[WARNING] amdsmi_interface.py:3569: SyntaxWarning: 'return' in a 'finally' block\n" +
		"{not json either\n" +
		`{"gpu_data": [{"gpu": 0, "power": {"socket_power": {"value": 42, "unit": "W"}}}]}`
	rd, err := ParseAMDSMI([]byte(out))
	if err != nil || rd.Values[results.GPUPowerW] != 42 {
		t.Errorf("%v, %v; want 42 W", rd.Values, err)
	}
	if _, err := ParseAMDSMI([]byte("[\n  {\"gpu\": 0,,}\n]")); err == nil || !strings.Contains(err.Error(), "document 1") {
		t.Errorf("a broken document: %v", err)
	}
}

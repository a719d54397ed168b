package scrape

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/servebench/servebench/results"
	"github.com/servebench/servebench/scrape/profile"
)

// FuzzParse feeds arbitrary pages to the parser under every profile. The
// parser must not panic, and whatever it reads must encode as JSON (no NaN
// or infinity) and decode back to the same Reading, because a Sample is a
// line of the results file.
func FuzzParse(f *testing.F) {
	pages, _ := filepath.Glob(filepath.Join("testdata", "*.prom"))
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("vllm:kv_cache_usage_perc{engine=\"0\"} NaN\nvllm:kv_cache_usage_perc{engine=\"1\"} 0.5\n"))
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"1\"} 2\nx_bucket{le=\"1\"} 3\nx_bucket{le=\"+Inf\"} 1\nx_count 1\nx_sum 1\n"))
	f.Add([]byte("sglang:num_running_reqs{dp_rank=\"01\",tp_rank=\"a\"} 1e308\nsglang:num_running_reqs{dp_rank=\"1\",tp_rank=\"b\"} 1e308\n"))

	names := []string{profile.Auto, profile.DCGM}
	for _, p := range profile.All() {
		names = append(names, p.Name)
	}
	p := NewParser()
	f.Fuzz(func(t *testing.T, page []byte) {
		for _, name := range names {
			rd, err := p.Parse(bytes.NewReader(page), name)
			if err != nil {
				continue
			}
			if name != profile.Auto && rd.Profile != name {
				t.Fatalf("profile %q read as %q", name, rd.Profile)
			}
			line, err := json.Marshal(rd)
			if err != nil {
				t.Fatalf("profile %s: marshal %+v: %v", name, rd, err)
			}
			var back results.Reading
			if err := json.Unmarshal(line, &back); err != nil {
				t.Fatalf("profile %s: unmarshal %s: %v", name, line, err)
			}
			if !reflect.DeepEqual(back, rd) {
				t.Fatalf("profile %s: round trip changed the reading:\n%+v\n%+v", name, rd, back)
			}
			for m := range rd.Values {
				if _, ok := rd.Matched[m]; !ok {
					t.Fatalf("profile %s: %s has a value but no matched source", name, m)
				}
			}
			for m, h := range rd.Histograms {
				if len(h.Upper) != len(h.Cumulative) {
					t.Fatalf("profile %s: %s has %d bounds and %d counts", name, m, len(h.Upper), len(h.Cumulative))
				}
				_, _ = h.Quantile(0.99)
			}
		}
	})
}

// BenchmarkParse measures reading one vLLM page with two engines: the work
// done once per scrape interval.
func BenchmarkParse(b *testing.B) {
	page, err := os.ReadFile(filepath.Join("testdata", "vllm_v1_dp2.prom"))
	if err != nil {
		b.Fatal(err)
	}
	p := NewParser()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Parse(bytes.NewReader(page), profile.VLLM); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzSMIReader feeds arbitrary CSV to the nvidia-smi reader: it must not
// panic, stop within as many samples as lines, and every reading must
// round-trip through JSON.
func FuzzSMIReader(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "nvidia-smi_h100_590.csv"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("timestamp, index, power.draw [W], utilization.gpu [%]\n2025/01/02 03:04:05.100, 0, 1e308 W, 90 %\n2025/01/02 03:04:05.100, 1, 1e308 W, NaN\n"))
	f.Add([]byte("timestamp,index,clocks_event_reasons.sw_power_cap\n2025/01/02 03:04:05.100,0,Active\n2025/01/02 03:04:05.200,0,\"Not Active\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sr, err := NewSMIReader(bytes.NewReader(data), time.UTC)
		if err != nil {
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for n := 0; ; n++ {
			if n > lines {
				t.Fatalf("more samples than lines (%d)", lines)
			}
			_, rd, err := sr.Next()
			if err != nil {
				return
			}
			enc, err := json.Marshal(rd)
			if err != nil {
				t.Fatalf("reading does not encode: %v", err)
			}
			var back results.Reading
			if err := json.Unmarshal(enc, &back); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzAMDSMI feeds arbitrary text to the amd-smi JSON parser and reader:
// they must not panic, every value must be finite and ≥ 0, the reader
// must stop within as many samples as the text has GPU entries could
// hold, and every reading must round-trip through JSON.
func FuzzAMDSMI(f *testing.F) {
	for _, name := range []string{"amd-smi_rocm6.1_changelog_power.json", "amd-smi_w7700_usage.json",
		"amd-smi_rx7800xt_power.json", "amd-smi_r9700_2gpu_usage.json", "amd-smi_watch_strixhalo_na.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`[{"gpu": 1, "timestamp": 1700000000.25, "power": {"current_power": 1e308, "power_limit": "-5 W"}, "usage": {"gfx_usage": 65535, "mem_usage": "NaN %"}, "mem_usage": {"used_vram": {"value": 1e300, "unit": "GB"}}}]`))
	f.Add([]byte("text\n{\"gpu\": 0, \"timestamp\": 1}\n{\"gpu\": 0, \"timestamp\": 2}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if rd, err := ParseAMDSMI(data); err == nil {
			checkReading(t, rd)
		}
		a := NewAMDSMIReader(bytes.NewReader(data))
		limit := len(data)/len(`{"gpu":0,"timestamp":1}`) + 1
		for n := 0; ; n++ {
			if n > limit {
				t.Fatalf("more samples than the text can hold entries (%d)", limit)
			}
			_, rd, err := a.Next()
			if err != nil {
				return
			}
			checkReading(t, rd)
		}
	})
}

func checkReading(t *testing.T, rd results.Reading) {
	t.Helper()
	for m, v := range rd.Values {
		if !finite(v) || v < 0 {
			t.Fatalf("%s = %v", m, v)
		}
	}
	enc, err := json.Marshal(rd)
	if err != nil {
		t.Fatalf("reading does not encode: %v", err)
	}
	var back results.Reading
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatal(err)
	}
}

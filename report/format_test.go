package report

import (
	"encoding/json"
	"testing"

	"github.com/servebench/servebench/results"
)

func TestFormatLatency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ms   float64
		n    int64
		want string
	}{
		{8.27, 1, "8.27"},
		{735, 1, "735"},
		{9_999, 1, "9999"},
		{12_345, 1, "12.3 s"},
		{59_960, 1, "1 min"},
		{383_517, 1, "6 min 24 s"},
		{3_723_000, 1, "1 h 02 min"},
		{5, 0, "-"},
	}
	for _, tc := range tests {
		if got := FormatLatency(tc.ms, tc.n); got != tc.want {
			t.Errorf("FormatLatency(%v, %d) = %q, want %q", tc.ms, tc.n, got, tc.want)
		}
	}
	for s, want := range map[float64]string{0.85: "850 ms", 9.854: "9.85 s", 20: "20 s", 29.64: "29.6 s", 120: "2 min"} {
		if got := FormatSeconds(s); got != want {
			t.Errorf("FormatSeconds(%v) = %q, want %q", s, got, want)
		}
	}
}

func TestWorkloadWords(t *testing.T) {
	t.Parallel()
	spec, err := results.DecodeSpec(json.RawMessage(`{"name":"w","target":{"url":"sim://tiny","api":"chat"},
		"prompts":{"input_tokens":{"dist":"normal","mean":512,"stddev":64,"min":256},"output_tokens":{"dist":"fixed","value":128},"dataset":{"path":"","format":"sharegpt"}},
		"load":{"stages":[
			{"name":"warm","concurrency":1,"requests":40,"duration":"30s","warmup":{"requests":4}},
			{"name":"open","rate":20,"arrival":"gamma","burstiness":0.5,"max_concurrency":256,"requests":200},
			{"rate":5,"arrival":"constant","max_concurrency":1024,"duration":"1m0s","warmup":{"duration":"5s"}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	w := workload(spec)
	want := []string{
		"closed loop, 1 worker; 40 requests or 30 s; warmup: first 4 requests",
		"open loop, gamma arrivals at 20 req/s (burstiness 0.5), at most 256 in flight; 200 requests",
		"open loop, evenly spaced arrivals at 5 req/s, at most 1024 in flight; 1 min; warmup: first 5 s",
	}
	for i, st := range w.Stages {
		if got := st.String(); got != want[i] {
			t.Errorf("stage %d: %q, want %q", i, got, want[i])
		}
	}
	if w.Stages[2].Name != "stage-2" || w.TargetURL != "sim://tiny" || w.Dataset != "" {
		t.Errorf("workload = %+v", w)
	}
	if got := w.InputTokens.String(); got != "normal mean 512, sd 64, at least 256" {
		t.Errorf("input tokens %q", got)
	}
	if got := w.OutputTokens.String(); got != "128" {
		t.Errorf("output tokens %q", got)
	}
}

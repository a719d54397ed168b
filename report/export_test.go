package report

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"testing"
)

// TestWriteCSVGolden pins the per-request CSV of the preemption fixture
// and checks its shape: a header row of CSVColumns, then one row of as many
// fields per request record, whose TTFT matches the summary's.
func TestWriteCSVGolden(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if warns, err := (Reader{}).WriteCSV(&b, preemptFixture); err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	goldenFile(t, "requests.csv", b.Bytes())
	rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	a, err := FromFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	if int64(len(rows)-1) != s.Overall.Requests.Scheduled {
		t.Fatalf("%d rows, want a header and %d requests", len(rows), s.Overall.Requests.Scheduled)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	top := 0.0
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[col["ttft_ms"]], 64)
		if err != nil {
			t.Fatalf("ttft_ms %q: %v", r[col["ttft_ms"]], err)
		}
		top = max(top, v)
	}
	if d := top - s.Overall.TTFT.Max; d < -0.05 || d > 0.05 {
		t.Errorf("largest TTFT in the CSV %.3f ms, summary max %.3f ms", top, s.Overall.TTFT.Max)
	}
}

// vllmKeys are the keys of the JSON file `vllm bench serve --save-result`
// writes without --save-detailed, for an openai or openai-chat backend with
// the default --percentile-metrics and --metric-percentiles 90,99, checked
// against vllm-project/vllm's vllm/benchmarks/serve.py (commit 009e6d4a1cd6):
// the setup keys main() sets in result_json, then the dict benchmark()
// returns and the mean_/median_/std_/pNN_ keys its process_one_metric adds.
var vllmKeys = map[string]string{
	"date": "string", "endpoint_type": "string", "backend": "string", "label": "string", "model_id": "string",
	"tokenizer_id": "string", "num_prompts": "number", "request_rate": "number or inf", "burstiness": "number",
	"max_concurrency": "number", "duration": "number", "completed": "number", "failed": "number",
	"total_input_tokens": "number", "total_output_tokens": "number", "request_throughput": "number",
	"request_goodput": "null", "output_throughput": "number", "total_token_throughput": "number",
	"max_output_tokens_per_s": "number", "max_concurrent_requests": "number", "rtfx": "number",
	"mean_ttft_ms": "number", "median_ttft_ms": "number", "std_ttft_ms": "number", "p90_ttft_ms": "number", "p99_ttft_ms": "number",
	"mean_tpot_ms": "number", "median_tpot_ms": "number", "std_tpot_ms": "number", "p90_tpot_ms": "number", "p99_tpot_ms": "number",
	"mean_itl_ms": "number", "median_itl_ms": "number", "std_itl_ms": "number", "p90_itl_ms": "number", "p99_itl_ms": "number",
	"mean_e2el_ms": "number", "median_e2el_ms": "number", "std_e2el_ms": "number", "p90_e2el_ms": "number", "p99_e2el_ms": "number",
}

// TestWriteVLLM checks the vLLM-format export of the preemption fixture: a
// golden file, one JSON object per stage, every key vLLM writes with the
// type it writes, and the figures taken from the right distributions (ITL
// per chunk, as vLLM measures it).
func TestWriteVLLM(t *testing.T) {
	t.Parallel()
	a, err := FromFiles(preemptFixture)
	if err != nil {
		t.Fatal(err)
	}
	s := a.Summary()
	var b bytes.Buffer
	if err := WriteVLLM(&b, s); err != nil {
		t.Fatal(err)
	}
	goldenFile(t, "vllm.jsonl", b.Bytes())
	sc := bufio.NewScanner(&b)
	n := 0
	for sc.Scan() {
		var obj map[string]any
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		st := s.Stages[n]
		for k, kind := range vllmKeys {
			v, ok := obj[k]
			if !ok {
				t.Errorf("stage %s: no key %q", st.Name, k)
				continue
			}
			switch kind {
			case "string":
				_, ok = v.(string)
			case "number":
				_, ok = v.(float64)
			case "null":
				ok = v == nil
			case "number or inf":
				_, ok = v.(float64)
				ok = ok || v == "inf"
			}
			if !ok {
				t.Errorf("stage %s: %s = %#v, want a %s", st.Name, k, v, kind)
			}
		}
		for k, want := range map[string]float64{"completed": float64(st.Requests.OK), "mean_itl_ms": st.ITLChunk.Mean,
			"p99_ttft_ms": st.TTFT.P99, "median_e2el_ms": st.E2E.P50, "max_concurrency": float64(s.Workload.Stages[n].Concurrency),
			"max_output_tokens_per_s": st.PeakOutputTokensPerSec} {
			if obj[k] != want {
				t.Errorf("stage %s: %s = %v, want %v", st.Name, k, obj[k], want)
			}
		}
		if obj["request_rate"] != "inf" {
			t.Errorf("stage %s: a closed loop's request_rate = %v, want \"inf\"", st.Name, obj["request_rate"])
		}
		n++
	}
	if n != len(s.Stages) {
		t.Errorf("%d objects, want one per stage (%d)", n, len(s.Stages))
	}
}

// TestVLLMOpenLoop checks the load keys of an open-loop stage: its rate,
// its burstiness, and its cap as max_concurrency.
func TestVLLMOpenLoop(t *testing.T) {
	t.Parallel()
	s := &Summary{Scenario: "x", Model: "m", Stages: []Stage{{Index: 0, Name: "a"}, {Index: 1, Name: "b"}},
		Workload: &Workload{API: "chat", Stages: []StageLoad{
			{Loop: "open", Rate: 30, Arrival: "gamma", Burstiness: 0.5, MaxConcurrency: 32},
			{Loop: "open", Rate: 2.5, Arrival: "constant"}}}}
	v := s.VLLM()
	if v[0].Backend != "openai-chat" || v[0].RequestRate != 30.0 || *v[0].Burstiness != 0.5 || *v[0].MaxConcurrency != 32 {
		t.Errorf("gamma stage: %+v", v[0])
	}
	if v[1].RequestRate != 2.5 || v[1].Burstiness != nil || v[1].MaxConcurrency != nil {
		t.Errorf("constant stage: %+v", v[1])
	}
}

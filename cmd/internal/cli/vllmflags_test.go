package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// vllmDefaultKeys are the keys `vllm bench serve --save-result` writes by
// default (vllm/benchmarks/serve.py: the setup keys of main() and the
// result of benchmark() with the default --percentile-metrics ttft,tpot,itl
// and --metric-percentiles 99; the per-request lists only with
// --save-detailed).
var vllmDefaultKeys = []string{"date", "endpoint_type", "label", "model_id", "tokenizer_id", "num_prompts",
	"request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
	"total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
	"max_output_tokens_per_s", "max_concurrent_requests",
	"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
	"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms"}

// TestMaxConcurrencyQueues is issue 21's like-for-like acceptance: the
// flags a vLLM user types (--rate with --max-concurrency) send every
// request, the excess waiting client-side as vLLM's semaphore makes it
// wait; the vLLM-format export has every key vllm writes by default, and
// says completed + failed + dropped = num_prompts.
func TestMaxConcurrencyQueues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e, out, errb := testEnv()
	err := bench(context.Background(), e, []string{"run", "--target", "sim://tiny?seed=2", "--rate", "200", "--max-concurrency", "2",
		"--requests", "30", "--input-tokens", "32", "--output-tokens", "24", "--seed", "9", "--out", dir, "--quiet"})
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errb)
	}
	if !strings.Contains(out.String(), "30 ok of 30 scheduled\n") || !strings.Contains(out.String(), "at most 2 in flight (more wait client-side)") {
		t.Errorf("want all 30 sent and the queue said:\n%s", out)
	}
	e, out, errb = testEnv()
	if err := bench(context.Background(), e, []string{"report", filepath.Join(dir, "results.jsonl"), "--format", "vllm"}); err != nil {
		t.Fatalf("report: %v\n%s", err, errb)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range vllmDefaultKeys {
		if _, ok := got[k]; !ok {
			t.Errorf("the vLLM export lacks %q", k)
		}
	}
	if got["servebench_accounting"] != "completed 30 + failed 0 + dropped 0 = num_prompts 30" || got["max_concurrency"] != 2.0 || got["tokenizer_id"] != "o200k_base" {
		t.Errorf("accounting %v, max_concurrency %v, tokenizer %v", got["servebench_accounting"], got["max_concurrency"], got["tokenizer_id"])
	}
}

// TestFromVLLM: a vllm bench serve command line becomes its closest
// equivalent, printed first with what differs; flags typed beside it win.
func TestFromVLLM(t *testing.T) {
	t.Parallel()
	e, out, errb := testEnv()
	err := bench(context.Background(), e, []string{"run", "--from-vllm",
		`vllm bench serve --backend openai-chat --endpoint /v1/chat/completions --model tiny \
		 --request-rate 8 --max-concurrency 16 --num-prompts 200 --random-input-len 512 --random-output-len 64 \
		 --seed 3 --num-warmups 4 --burstiness 0.5 --save-result`,
		"--target", "sim://tiny", "--dry-run"})
	if err != nil {
		t.Fatalf("run: %v\n%s%s", err, out, errb)
	}
	for _, want := range []string{"--rate 8 --burstiness 0.5 --max-concurrency 16 --requests 200 --num-warmups 4",
		"--save-result is ignored", "wait client-side (overflow: queue)"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
	for _, want := range []string{`"overflow": "queue"`, `"requests": 204`, `"burstiness": 0.5`, `"arrival": "gamma"`,
		`"api": "chat"`, `"url": "sim://tiny"`, "(more wait client-side, oldest first)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the plan lacks %q:\n%s", want, out)
		}
	}
	e, _, _ = testEnv()
	err = bench(context.Background(), e, []string{"run", "--from-vllm", "vllm bench serve --dataset-name sonnet", "--dry-run"})
	if err == nil || !strings.Contains(err.Error(), "--dataset-name sonnet") {
		t.Errorf("an untranslatable dataset: %v", err)
	}
}

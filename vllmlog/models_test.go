package vllmlog

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/servebench/servebench/internal/kvcapacity"
)

// TestParseModelConfig reads the KV-relevant layer structure from
// config.json files of the kinds the check supports, and refuses the kinds
// it does not model.
func TestParseModelConfig(t *testing.T) {
	t.Parallel()
	alternating := `["sliding_attention", "full_attention", "sliding_attention", "full_attention"]`
	for _, tc := range []struct {
		name, json string
		want       []kvcapacity.Attention
		err        string
	}{
		{"gpt-oss style", `{"architectures": ["GptOssForCausalLM"], "num_hidden_layers": 4, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128, "layer_types": ` + alternating + `}`,
			[]kvcapacity.Attention{{Layers: 2, KVHeads: 8, HeadDim: 64}, {Layers: 2, SlidingWindow: 128, KVHeads: 8, HeadDim: 64}}, ""},
		{"Qwen2 without sliding window", `{"num_hidden_layers": 64, "num_attention_heads": 40, "num_key_value_heads": 8, "hidden_size": 5120, "sliding_window": 131072, "use_sliding_window": false}`,
			[]kvcapacity.Attention{{Layers: 64, KVHeads: 8, HeadDim: 128}}, ""},
		{"Gemma 3 pattern", `{"text_config": {"num_hidden_layers": 12, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024, "sliding_window_pattern": 6}}`,
			[]kvcapacity.Attention{{Layers: 2, KVHeads: 4, HeadDim: 256}, {Layers: 10, SlidingWindow: 1024, KVHeads: 4, HeadDim: 256}}, ""},
		{"shared KV layers", `{"num_hidden_layers": 6, "num_key_value_heads": 1, "head_dim": 64, "num_kv_shared_layers": 2, "sliding_window": 8, "layer_types": ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention"]}`,
			[]kvcapacity.Attention{{Layers: 1, KVHeads: 1, HeadDim: 64}, {Layers: 3, SlidingWindow: 8, KVHeads: 1, HeadDim: 64}}, ""},
		{"MLA", `{"num_hidden_layers": 61, "kv_lora_rank": 512}`, nil, "latent attention"},
		{"state-space layers", `{"num_hidden_layers": 2, "num_key_value_heads": 1, "head_dim": 8, "layer_types": ["mamba", "full_attention"]}`, nil, "not modelled"},
		{"no layers", `{"num_key_value_heads": 1}`, nil, "num_hidden_layers"},
		{"not JSON", `{`, nil, "unexpected end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := parseModelConfig([]byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.layers, tc.want) {
				t.Errorf("layers = %+v, want %+v", d.layers, tc.want)
			}
		})
	}
}

// TestModelConfigOption checks the KV arithmetic against a config.json
// given by the user: Gemma 4 31B's published configuration reproduces the
// seed log's figures as the built-in description does.
func TestModelConfigOption(t *testing.T) {
	t.Parallel()
	rep, err := ParseFiles(context.Background(), []string{filepath.Join("testdata", "gemma-4-31b.log")},
		Options{ModelConfig: filepath.Join("testdata", "gemma-4-31b.config.json")})
	if err != nil {
		t.Fatal(err)
	}
	ck := rep.Runs[0].KV.Check
	if !ck.Agrees() || ck.Source != "--model-config" || ck.Blocks != 6216 || ck.BlocksPerRequest != 5061 {
		t.Errorf("check: %+v", ck)
	}
	if _, err := ParseFiles(context.Background(), nil, Options{ModelConfig: "testdata/no-such.json"}); err == nil {
		t.Error("a missing config.json is an error")
	}
}

// TestCheckUnknownModel: a model servebench has no description of is
// checked by architecture when one fits, and otherwise not at all, saying
// why.
func TestCheckUnknownModel(t *testing.T) {
	t.Parallel()
	lines := func(model, arch string) string {
		return strings.Join([]string{
			"(APIServer pid=1) INFO 01-01 00:00:00 [utils.py:1] non-default args: {'model': '" + model + "', 'max_model_len': 131072}",
			"(APIServer pid=1) INFO 01-01 00:00:01 [model.py:1] Resolved architecture: " + arch,
			"(EngineCore pid=2) INFO 01-01 00:00:02 [gpu_worker.py:1] Available KV cache memory: 36.56 GiB",
			"(EngineCore pid=2) INFO 01-01 00:00:02 [kv_cache_utils.py:1] GPU KV cache size: 798,624 tokens",
			"(EngineCore pid=2) INFO 01-01 00:00:02 [kv_cache_utils.py:2] Maximum concurrency for 131,072 tokens per request: 11.99x",
		}, "\n")
	}
	rep, err := Parse(context.Background(), "renamed", strings.NewReader(lines("/models/my-finetune", "GptOssForCausalLM")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ck := rep.Runs[0].KV.Check; !ck.Agrees() || ck.Model != "gpt-oss-20b" || !strings.Contains(ck.Source, "same architecture") {
		t.Errorf("by architecture: %+v", ck)
	}
	rep, err = Parse(context.Background(), "unknown", strings.NewReader(lines("/models/x", "LlamaForCausalLM")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ck := rep.Runs[0].KV.Check; ck == nil || !strings.Contains(ck.Skipped, "--model-config") {
		t.Errorf("unknown model: %+v", ck)
	}
}

// TestCheckNoFalseDisagreement: a Qwen2 model other than the built-in
// DeepSeek-R1-Distill-Qwen-32B (here Qwen2.5-0.5B with TP 2, corpus log
// 036, given the KV lines of corpus log 024) is not checked against the
// 32B's layers: no description fits, so the check says so instead of
// reporting a disagreement.
func TestCheckNoFalseDisagreement(t *testing.T) {
	t.Parallel()
	start := mustRead(t, "testdata/corpus/036-v1-start-tp2-qwen2.log")
	kvLines := mustRead(t, "testdata/corpus/024-v1-kv-lines-unnamed-model.log")
	for _, name := range []string{"named", "unnamed"} {
		text := start + kvLines
		if name == "unnamed" {
			text = strings.NewReplacer("'/data/datasets/models-hf/Qwen2.5-0.5B/'", "''", "model_tag", "x").Replace(text)
		}
		rep, err := Parse(context.Background(), name, strings.NewReader(text), Options{})
		if err != nil {
			t.Fatal(err)
		}
		ck := rep.Runs[len(rep.Runs)-1].KV.Check
		if ck == nil || ck.Skipped == "" || !strings.Contains(ck.Skipped, "--model-config") {
			t.Errorf("%s: check %+v: want it skipped, naming --model-config", name, ck)
		}
		var b bytes.Buffer
		if err := Write(&b, rep, "text"); err != nil || strings.Contains(b.String(), "DOES NOT AGREE") {
			t.Errorf("%s: the report claims a disagreement (%v):\n%s", name, err, b.String())
		}
	}
}

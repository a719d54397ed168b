package vllmlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/servebench/servebench/internal/inputfile"
	"github.com/servebench/servebench/internal/kvcapacity"
)

// modelDesc is what the KV check needs to know about a model: its kinds
// of attention layers, with KV heads before tensor parallelism.
type modelDesc struct {
	name         string
	architecture string
	match        []string // lower-case substrings of a model path that name it
	layers       []kvcapacity.Attention
	summary      string // one sentence on the layer structure
}

// builtinModels are the models of the project's seed logs, from their
// published config.json files.
var builtinModels = []modelDesc{
	{
		name: "gpt-oss-120b", architecture: "GptOssForCausalLM", match: []string{"gpt-oss-120b"},
		layers:  []kvcapacity.Attention{{Layers: 18, KVHeads: 8, HeadDim: 64}, {Layers: 18, SlidingWindow: 128, KVHeads: 8, HeadDim: 64}},
		summary: "36 layers alternating full attention and a 128-token sliding window, 8 KV heads of 64 dimensions each",
	},
	{
		name: "gpt-oss-20b", architecture: "GptOssForCausalLM", match: []string{"gpt-oss-20b"},
		layers:  []kvcapacity.Attention{{Layers: 12, KVHeads: 8, HeadDim: 64}, {Layers: 12, SlidingWindow: 128, KVHeads: 8, HeadDim: 64}},
		summary: "24 layers alternating full attention and a 128-token sliding window, 8 KV heads of 64 dimensions each",
	},
	{
		name: "DeepSeek-R1-Distill-Qwen-32B", architecture: "Qwen2ForCausalLM",
		match:   []string{"deepseek-r1-distill-qwen-32b", "deepseek-r1-32b"},
		layers:  []kvcapacity.Attention{{Layers: 64, KVHeads: 8, HeadDim: 128}},
		summary: "64 full-attention layers (Qwen2), 8 KV heads of 128 dimensions each",
	},
	{
		name: "gemma-4-31B", architecture: "Gemma4ForConditionalGeneration", match: []string{"gemma-4-31b"},
		layers:  []kvcapacity.Attention{{Layers: 50, SlidingWindow: 1024, KVHeads: 16, HeadDim: 256}, {Layers: 10, KVHeads: 4, HeadDim: 512}},
		summary: "60 layers, five 1,024-token sliding-window layers (16 KV heads of 256) to every full-attention layer (4 KV heads of 512)",
	},
	{
		name: "gemma-4-26B-A4B", architecture: "Gemma4ForConditionalGeneration", match: []string{"gemma-4-26b-a4b"},
		layers:  []kvcapacity.Attention{{Layers: 25, SlidingWindow: 1024, KVHeads: 8, HeadDim: 256}, {Layers: 5, KVHeads: 2, HeadDim: 512}},
		summary: "30 layers, five 1,024-token sliding-window layers (8 KV heads of 256) to every full-attention layer (2 KV heads of 512)",
	},
}

// loadModelConfig reads a Hugging Face config.json into the layer
// description the KV check uses. It understands full and sliding-window
// attention given by layer_types, sliding_window_pattern or Qwen2's
// use_sliding_window/max_window_layers, Gemma's global_head_dim and
// num_global_key_value_heads, shared-KV layers and a nested text_config.
// Caches it cannot model (MLA, state-space layers) are errors.
func loadModelConfig(path string) (*modelDesc, error) {
	data, err := inputfile.ReadFile(path, inputfile.Limit{What: "model config.json", MaxBytes: 16 << 20})
	if err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	d, err := parseModelConfig(data)
	if err != nil {
		return nil, fmt.Errorf("model config %s: %w", path, err)
	}
	if d.name == "" {
		d.name = path
	}
	return d, nil
}

func parseModelConfig(data []byte) (*modelDesc, error) {
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	cfg := top
	if tc, ok := top["text_config"].(map[string]any); ok {
		cfg = tc
	}
	num := func(key string) (int, bool) {
		for _, m := range []map[string]any{cfg, top} {
			if f, ok := m[key].(float64); ok && f == float64(int(f)) {
				return int(f), true
			}
		}
		return 0, false
	}
	d := &modelDesc{}
	if a, ok := top["architectures"].([]any); ok && len(a) > 0 {
		d.architecture, _ = a[0].(string)
	}
	d.name, _ = top["_name_or_path"].(string)
	if _, mla := num("kv_lora_rank"); mla {
		return nil, errors.New("multi-head latent attention (kv_lora_rank) caches are not modelled by the check")
	}
	layers, ok := num("num_hidden_layers")
	if !ok || layers < 1 || layers > 1<<12 {
		return nil, errors.New("num_hidden_layers missing or out of range")
	}
	heads, _ := num("num_attention_heads")
	kvHeads, ok := num("num_key_value_heads")
	if !ok {
		kvHeads = heads
	}
	headDim, ok := num("head_dim")
	if !ok {
		if hidden, ok := num("hidden_size"); ok && heads > 0 {
			headDim = hidden / heads
		}
	}
	if kvHeads < 1 || headDim < 1 {
		return nil, errors.New("num_key_value_heads and head_dim (or hidden_size / num_attention_heads) must be positive")
	}
	fullHeads, fullDim := kvHeads, headDim
	if v, ok := num("num_global_key_value_heads"); ok && v > 0 {
		fullHeads = v
	}
	if v, ok := num("global_head_dim"); ok && v > 0 {
		fullDim = v
	}
	window, _ := num("sliding_window")
	kinds, err := layerKinds(cfg, num, layers, window)
	if err != nil {
		return nil, err
	}
	if shared, _ := num("num_kv_shared_layers"); shared > 0 && shared < layers {
		kinds = kinds[:layers-shared] // the last layers reuse earlier layers' KV
	}
	var full, sliding int
	for _, k := range kinds {
		if k == "full" {
			full++
		} else {
			sliding++
		}
	}
	if sliding > 0 && window <= 0 {
		return nil, errors.New("sliding-window layers without a sliding_window size")
	}
	d.layers = []kvcapacity.Attention{{Layers: full, KVHeads: fullHeads, HeadDim: fullDim}}
	if sliding > 0 {
		d.layers = append(d.layers, kvcapacity.Attention{Layers: sliding, SlidingWindow: window, KVHeads: kvHeads, HeadDim: headDim})
	}
	switch {
	case sliding == 0:
		d.summary = fmt.Sprintf("%d full-attention layers, %d KV heads of %d dimensions each", full, kvHeads, headDim)
	default:
		d.summary = fmt.Sprintf("%d full-attention layers (%d KV heads of %d) and %d layers with a %s-token sliding window (%d KV heads of %d)",
			full, fullHeads, fullDim, sliding, kvcapacity.Thousands(window), kvHeads, headDim)
	}
	return d, nil
}

// layerKinds says of each layer whether it attends to the whole context
// ("full") or a sliding window ("sliding"): from layer_types when the
// config lists them, else from its sliding-window settings (a pattern, or
// the first max_window_layers).
func layerKinds(cfg map[string]any, num func(string) (int, bool), layers, window int) ([]string, error) {
	kinds := make([]string, layers) // "full" or "sliding"
	switch lt, _ := cfg["layer_types"].([]any); {
	case len(lt) > 0:
		if len(lt) != layers {
			return nil, fmt.Errorf("layer_types lists %d layers, num_hidden_layers says %d", len(lt), layers)
		}
		for i, v := range lt {
			s, _ := v.(string)
			switch s {
			case "full_attention", "attention", "global":
				kinds[i] = "full"
			case "sliding_attention", "sliding_window", "local":
				kinds[i] = "sliding"
			default:
				return nil, fmt.Errorf("layer type %q is not modelled by the check", s)
			}
		}
	default:
		pattern, _ := num("sliding_window_pattern")
		use, set := cfg["use_sliding_window"].(bool)
		maxWindow, hasMax := num("max_window_layers")
		for i := range kinds {
			switch {
			case window <= 0 || (set && !use):
				kinds[i] = "full"
			case pattern > 0:
				kinds[i] = map[bool]string{true: "full", false: "sliding"}[(i+1)%pattern == 0]
			case set && use && hasMax:
				kinds[i] = map[bool]string{true: "full", false: "sliding"}[i < maxWindow]
			default:
				kinds[i] = "sliding"
			}
		}
	}
	return kinds, nil
}

// findModel returns the built-in descriptions a run's model names, or,
// when its name matches none, those of its architecture (the check then
// keeps the one that reproduces the log).
func findModel(names []string, architecture string) (byName *modelDesc, byArch []*modelDesc) {
	for i := range builtinModels {
		d := &builtinModels[i]
		for _, n := range names {
			n = strings.ToLower(n)
			for _, m := range d.match {
				if n != "" && strings.Contains(n, m) {
					return d, nil
				}
			}
		}
	}
	for i := range builtinModels {
		if d := &builtinModels[i]; architecture != "" && d.architecture == architecture {
			byArch = append(byArch, d)
		}
	}
	return nil, byArch
}

package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/servebench/servebench/internal/inputfile"
	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/internal/tokenizer"
	"github.com/servebench/servebench/internal/yamlmsg"
)

//go:embed presets/*.yaml
var presetFS embed.FS

// Config is everything that defines a simulated server: the model's KV-cache
// geometry, vLLM's scheduler settings, the step-time cost model and the
// server's identity. Presets and user files are YAML with these keys; keys
// are vLLM's own argument names where vLLM has one.
//
// A Config is a value; copy it freely. Validate before use (Listen and
// NewEngine do).
type Config struct {
	// Base names a preset this file starts from (user files only; empty
	// starts from the built-in defaults).
	Base string `yaml:"base,omitempty"`
	// Name is the preset's name, reported in logs.
	Name string `yaml:"name"`
	// Model is the model path or Hugging Face id (vLLM's --model), shown as
	// the model card's root.
	Model string `yaml:"model"`
	// ServedModelName is the name requests must use and responses carry.
	ServedModelName string `yaml:"served_model_name"`
	// VLLMVersion is reported by /version and in the startup log.
	VLLMVersion string `yaml:"vllm_version"`
	// Architecture is the model's architecture string (log only).
	Architecture string `yaml:"architecture"`
	// Seed makes step-time jitter and synthetic output repeatable.
	Seed uint64 `yaml:"seed"`

	// MaxModelLen is the context length in tokens (prompt + output).
	MaxModelLen int `yaml:"max_model_len"`
	// MaxNumSeqs caps the running requests.
	MaxNumSeqs int `yaml:"max_num_seqs"`
	// MaxNumBatchedTokens is the per-step token budget.
	MaxNumBatchedTokens int `yaml:"max_num_batched_tokens"`
	// LongPrefillTokenThreshold caps one request's grant per step (0: off).
	LongPrefillTokenThreshold int `yaml:"long_prefill_token_threshold"`
	// EnableChunkedPrefill lets prompts be prefilled over several steps.
	EnableChunkedPrefill bool `yaml:"enable_chunked_prefill"`
	// EnablePrefixCaching reuses cached full blocks of identical prefixes.
	EnablePrefixCaching bool `yaml:"enable_prefix_caching"`
	// GPUMemoryUtilization is informational (cache_config_info); the KV
	// capacity comes from KVCacheMemoryBytes.
	GPUMemoryUtilization float64 `yaml:"gpu_memory_utilization"`

	// BlockSize is the KV block size in tokens.
	BlockSize int `yaml:"block_size"`
	// KVCacheMemoryBytes is the memory available for the KV cache (what
	// vLLM logs as "Available KV cache memory", in bytes).
	KVCacheMemoryBytes int64 `yaml:"kv_cache_memory_bytes"`
	// NumGPUBlocksOverride, when > 0, replaces the computed block count.
	NumGPUBlocksOverride int `yaml:"num_gpu_blocks_override"`
	// NumLayers is the number of attention layers.
	NumLayers int `yaml:"num_layers"`
	// NumKVHeads is the number of KV heads per layer.
	NumKVHeads int `yaml:"num_kv_heads"`
	// HeadDim is the attention head size.
	HeadDim int `yaml:"head_dim"`
	// KVDtypeBytes is the size of one KV element in bytes (2 for bf16).
	KVDtypeBytes int `yaml:"kv_dtype_bytes"`
	// SlidingWindow is the window of the sliding-window layers in tokens
	// (0: every layer is full attention).
	SlidingWindow int `yaml:"sliding_window"`
	// SlidingWindowLayers is how many of NumLayers use the sliding window.
	SlidingWindowLayers int `yaml:"sliding_window_layers"`

	// StepOverheadUS is the fixed cost of one engine step in microseconds.
	StepOverheadUS float64 `yaml:"step_overhead_us"`
	// PerSeqUS is the cost of each request in a step in microseconds.
	PerSeqUS float64 `yaml:"per_seq_us"`
	// PerKVTokenNS is the cost in nanoseconds of reading one token of
	// context in every layer, for each running request in a step (decode is
	// memory-bandwidth bound, so this term grows with the KV cache).
	PerKVTokenNS float64 `yaml:"per_kv_token_ns"`
	// PerPrefillTokenUS is the cost of each scheduled prompt token in
	// microseconds.
	PerPrefillTokenUS float64 `yaml:"per_prefill_token_us"`
	// JitterFrac is the standard deviation of a step's multiplicative
	// noise (0.01 is 1 %), drawn from the seeded generator.
	JitterFrac float64 `yaml:"jitter_frac"`

	// MeanOutputTokens is the mean length of a natural (EOS) answer when a
	// request does not set ignore_eos; lengths are geometric. 0 means the
	// model never emits EOS and stops only at max_tokens.
	MeanOutputTokens int `yaml:"mean_output_tokens"`
	// LogStatsInterval is the period of the "Engine 000: Avg prompt
	// throughput …" log line (VLLM_LOG_STATS_INTERVAL).
	LogStatsInterval time.Duration `yaml:"log_stats_interval"`
	// EnablePromptTokensDetails adds usage.prompt_tokens_details.cached_tokens.
	EnablePromptTokensDetails bool `yaml:"enable_prompt_tokens_details"`
	// Tokenizer is what the simulator counts prompts with (usage and
	// /tokenize): o200k_base (the default when empty), cl100k_base, or the
	// path of a Hugging Face tokenizer.json, as a scenario's
	// prompts.tokenizer. A simulator counting with another tokenizer than
	// the scenario's stands for a model whose tokenizer the scenario did not
	// name.
	Tokenizer string `yaml:"tokenizer,omitempty"`

	// ReasoningTokens is how many of a chat response's first output tokens
	// are reasoning, as vLLM streams them with a reasoning parser
	// (--reasoning-parser deepseek_r1): in delta.reasoning_content up to
	// vLLM 0.11, in both reasoning and reasoning_content from 0.12 to
	// 0.15, in delta.reasoning only from 0.16 (vllm_version decides). The
	// answer's content follows, so time to first token and time to first
	// content differ by about this many steps. 0: no reasoning.
	ReasoningTokens int `yaml:"reasoning_tokens"`
	// EmbeddingDims is the length of the vectors /v1/embeddings returns
	// (a request's "dimensions" may ask for fewer).
	EmbeddingDims int `yaml:"embedding_dims"`

	// GPUs is the number of GPUs the simulated model runs on (tensor
	// parallel), each drawing the same power; it shapes the GPU telemetry
	// only. 0 is 1.
	GPUs int `yaml:"gpus,omitempty"`
	// IdlePowerW is one GPU's power in watts while no step runs. Set with
	// MaxPowerW, it turns the power model on: the simulator serves a DCGM
	// exporter's page at /dcgm/metrics (power, the energy counter, GPU
	// utilisation, the power limit), which a run reads as GPU telemetry.
	// 0: no power model.
	IdlePowerW float64 `yaml:"idle_power_w,omitempty"`
	// MaxPowerW is one GPU's power in watts during a step with a full
	// batch (idle_power_w when lower). A step draws IdlePowerW + (MaxPowerW − IdlePowerW) × its
	// occupancy, the larger of its requests over max_num_seqs and its
	// tokens over max_num_batched_tokens; energy is that power integrated
	// over the steps, and the idle power over the time between them.
	MaxPowerW float64 `yaml:"max_power_w,omitempty"`
	// PowerLimitW is the power limit each GPU reports (default
	// max_power_w).
	PowerLimitW float64 `yaml:"power_limit_w,omitempty"`
	// NumSpeculativeTokens is the draft length of speculative decoding
	// (vLLM's num_speculative_tokens): in every decode step each request
	// proposes this many tokens (fewer near its max_tokens), of which a
	// prefix is accepted, and gains the accepted tokens plus one. The
	// simulator then exports vLLM's spec_decode counters. 0: off.
	NumSpeculativeTokens int `yaml:"num_speculative_tokens,omitempty"`
	// DraftAcceptance is the chance that a draft's first token is
	// accepted; the token at position i is accepted, when the earlier ones
	// were, with chance draft_acceptance × draft_acceptance_decay^i.
	DraftAcceptance float64 `yaml:"draft_acceptance,omitempty"`
	// DraftAcceptanceDecay scales the acceptance chance from one draft
	// position to the next (0 is 1: every position alike).
	DraftAcceptanceDecay float64 `yaml:"draft_acceptance_decay,omitempty"`
	// PerDraftTokenUS is the cost in microseconds of each drafted token
	// in a step (drafting it and verifying it).
	PerDraftTokenUS float64 `yaml:"per_draft_token_us,omitempty"`

	// Calibration records how a fitted preset (a twin written by `bench
	// calibrate`) was obtained. The engine ignores it; `bench predict`
	// draws its bands from it. Nil for the embedded presets.
	Calibration *Calibration `yaml:"calibration,omitempty"`
}

// Calibration is the provenance and uncertainty of a fitted preset.
type Calibration struct {
	// Sources are the results files the fit read.
	Sources []string `yaml:"sources"`
	// Segments is the number of timed step sequences the cost model was
	// fitted on.
	Segments int `yaml:"segments"`
	// Coefficients names the settings Covariance's rows and columns are,
	// in order (Config's YAML keys: step_overhead_us, per_seq_us, …).
	Coefficients []string `yaml:"coefficients"`
	// Covariance of the fitted settings, in their units squared. A
	// setting that was not fitted has a zero row and column.
	Covariance [][]float64 `yaml:"covariance"`
	// StdErr is each fitted setting's standard error, in its unit,
	// capacity settings included (num_gpu_blocks_override).
	StdErr map[string]float64 `yaml:"stderr"`
	// Notes say what the runs could not show and what was assumed.
	Notes []string `yaml:"notes,omitempty"`
	// Assumed names each setting the runs could not show and that was
	// assumed rather than measured or given, with why: a prediction that
	// depends on one says so.
	Assumed map[string]string `yaml:"assumed,omitempty"`
	// Range is what the runs covered: a prediction beyond it is an
	// extrapolation and says so. Nil in twins fitted before it was kept.
	Range *CalibratedRange `yaml:"range,omitempty"`
	// BetweenRuns is the run-to-run variation the fit found among
	// repeated runs (or stages) of one load, included in Covariance; nil
	// when no load was repeated, and the band is then the fit's alone.
	BetweenRuns *BetweenRuns `yaml:"between_runs,omitempty"`
	// Power is how the power model was fitted; nil when the runs had no
	// GPU telemetry (idle_power_w and max_power_w are then unset).
	Power *PowerFit `yaml:"power,omitempty"`
}

// PowerFit is the fit of a twin's power model to GPU telemetry.
type PowerFit struct {
	// Covariance of (idle_power_w, max_power_w), watts squared.
	Covariance [][]float64 `yaml:"covariance"`
	// OccupancyMin and OccupancyMax are the batch occupancy (requests in
	// the batch over max_num_seqs) the GPU intervals spanned: power beyond
	// them is extrapolated.
	OccupancyMin float64 `yaml:"occupancy_min"`
	OccupancyMax float64 `yaml:"occupancy_max"`
	Intervals    int     `yaml:"intervals"` // GPU intervals fitted
	// ResidualW is the standard deviation of an interval's power about
	// the fitted line, watts a GPU: how far the linear law misses a
	// window, which a prediction's band includes.
	ResidualW float64 `yaml:"residual_w"`
	// StageMiss is the twin's in-sample miss of the calibration stages'
	// energy: the root mean square, over the Stages whose span the GPU
	// samples covered, of the relative difference between a stage's
	// measured mean power and the fitted line at the stage's mean batch
	// occupancy, which is the twin's mean power at that occupancy. A
	// prediction's band of joules per token includes it. 0 in twins
	// fitted before it was kept.
	StageMiss float64 `yaml:"stage_miss,omitempty"`
	Stages    int     `yaml:"stages,omitempty"`
}

// CalibratedRange is what a twin's runs covered.
type CalibratedRange struct {
	BatchMin  int `yaml:"batch_min"`  // fewest requests decoding together in a step
	BatchMax  int `yaml:"batch_max"`  // most requests decoding together in a step
	PromptMin int `yaml:"prompt_min"` // shortest prompt, tokens
	PromptMax int `yaml:"prompt_max"` // longest prompt, tokens
	OutputMax int `yaml:"output_max"` // longest response, tokens
}

// BetweenRuns is the run-to-run variation of a server's speed: the
// relative standard deviation, between repeated runs (or stages) of the
// same load, of their steps' mean duration against the fit, with its
// degrees of freedom (repeats less loads).
type BetweenRuns struct {
	RelSD     float64 `yaml:"rel_sd"`
	DF        int     `yaml:"df"`
	Instances int     `yaml:"instances"` // stages of repeated loads compared
	Loads     int     `yaml:"loads"`     // distinct loads among them
}

// Defaults is the configuration every preset and user file starts from:
// vLLM's defaults where vLLM has them, and a small generic model.
func Defaults() Config {
	return Config{
		Name:                 "custom",
		Model:                "sim/model",
		ServedModelName:      "sim-model",
		VLLMVersion:          "0.11.2",
		Architecture:         "LlamaForCausalLM",
		Seed:                 0,
		MaxModelLen:          4096,
		MaxNumSeqs:           256,
		MaxNumBatchedTokens:  2048,
		EnableChunkedPrefill: true,
		EnablePrefixCaching:  true,
		GPUMemoryUtilization: 0.9,
		BlockSize:            16,
		KVCacheMemoryBytes:   1 << 30,
		NumLayers:            32,
		NumKVHeads:           8,
		HeadDim:              128,
		KVDtypeBytes:         2,
		StepOverheadUS:       5000,
		PerSeqUS:             50,
		PerKVTokenNS:         10,
		PerPrefillTokenUS:    50,
		JitterFrac:           0.01,
		MeanOutputTokens:     256,
		LogStatsInterval:     10 * time.Second,
		EmbeddingDims:        1024,
	}
}

// ConfigFromURL resolves a target URL of the form sim://PRESET?name=value&…
// or sim://./FILE.yaml?… (package internal/simurl owns the form) into a
// configuration: the embedded preset, or the preset file read with
// LoadConfig (a relative path is relative to the working directory), with
// each setting applied and the result validated.
func ConfigFromURL(raw string) (Config, error) {
	u, err := simurl.Parse(raw)
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	if u.File != "" {
		cfg, err = LoadConfig(u.File)
	} else {
		cfg, err = Preset(u.Preset)
	}
	if err != nil {
		return Config{}, err
	}
	for _, s := range u.Settings {
		if err := cfg.Set(s.Name, s.Value); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

// PresetNames lists the embedded presets, sorted.
func PresetNames() []string {
	entries, err := fs.ReadDir(presetFS, "presets")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// Preset returns the named embedded preset, validated.
func Preset(name string) (Config, error) {
	return preset(name, 0)
}

func preset(name string, depth int) (Config, error) {
	if depth > 4 {
		return Config{}, fmt.Errorf("preset %q: base chain too deep", name)
	}
	data, err := presetFS.ReadFile(path.Join("presets", name+".yaml"))
	if err != nil {
		return Config{}, fmt.Errorf("preset %q: unknown (known: %s)", name, strings.Join(PresetNames(), ", "))
	}
	c, err := parseConfig(data, depth)
	if err != nil {
		return Config{}, fmt.Errorf("preset %s: %w", name, err)
	}
	return c, nil
}

// LoadConfig reads a user's preset file. Its keys are Config's YAML keys;
// unknown keys are errors. A file may start from an embedded preset with
// `base: NAME` and override only what differs.
func LoadConfig(file string) (Config, error) {
	data, err := inputfile.ReadFile(file, inputfile.Limit{What: "simulator preset", MaxBytes: 16 << 20})
	if err != nil {
		return Config{}, fmt.Errorf("sim config: %w", err)
	}
	c, err := parseConfig(data, 0)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", file, err)
	}
	return c, nil
}

func parseConfig(data []byte, depth int) (Config, error) {
	// Decode once to find the base, then decode the file over it.
	var head struct {
		Base string `yaml:"base"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil {
		return Config{}, errors.New(yamlmsg.TextIn(data, err))
	}
	c := Defaults()
	if head.Base != "" {
		b, err := preset(head.Base, depth+1)
		if err != nil {
			return Config{}, err
		}
		c = b
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, errors.New(yamlmsg.Text(err, true))
	}
	c.Base = ""
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Set overrides one key, as `bench sim --set key=value` does: key is a YAML
// key of Config (for example "max_num_batched_tokens" or "seed") and value
// a YAML scalar ("4096", "true", "250ms"). The result is validated.
func (c *Config) Set(key, value string) error {
	key = strings.TrimSpace(key)
	if key == "" || key == "base" {
		return fmt.Errorf("set %q: not a settable key", key)
	}
	if all, err := Settings(); err == nil && !slices.ContainsFunc(all, func(s Setting) bool { return s.Name == key }) {
		return fmt.Errorf("set %s=%s: %s", key, value, unknownSetting(key))
	}
	node := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: key},
		{Kind: yaml.ScalarNode, Value: value},
	}}
	data, err := yaml.Marshal(node)
	if err != nil {
		return fmt.Errorf("set %s: %w", key, err)
	}
	next := *c
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&next); err != nil {
		return fmt.Errorf("set %s=%s: %s", key, value, yamlmsg.Text(err, false))
	}
	if err := next.Validate(); err != nil {
		return fmt.Errorf("set %s=%s: %w", key, value, err)
	}
	*c = next
	return nil
}

// Validate reports every inconsistent or out-of-range setting, joined.
// It does not modify c.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	c.validateScheduler(bad)
	c.validateKV(bad)
	c.validateCosts(bad)
	c.validatePower(bad)
	c.validateCalibration(bad)
	if len(errs) == 0 {
		k, err := c.Capacity()
		switch {
		case err != nil:
			errs = append(errs, err)
		case k.NumBlocks-1 < k.BlocksPerRequest:
			// vLLM refuses to start when one request at max_model_len
			// cannot fit; so do we, or such a request would wait forever.
			errs = append(errs, fmt.Errorf("kv_cache_memory_bytes: %d usable blocks cannot hold one request of max_model_len %d (%d blocks); raise the memory or lower max_model_len",
				k.NumBlocks-1, c.MaxModelLen, k.BlocksPerRequest))
		}
	}
	return errors.Join(errs...)
}

// badFunc records one problem of a configuration.
type badFunc func(field, format string, args ...any)

// validateScheduler checks the scheduler's limits and the served model.
func (c *Config) validateScheduler(bad badFunc) {
	if c.ServedModelName == "" {
		bad("served_model_name", "must not be empty")
	}
	if c.MaxModelLen < 2 {
		bad("max_model_len", "must be at least 2, got %d", c.MaxModelLen)
	}
	if c.MaxNumSeqs < 1 {
		bad("max_num_seqs", "must be at least 1, got %d", c.MaxNumSeqs)
	}
	if c.MaxNumBatchedTokens < c.MaxNumSeqs {
		bad("max_num_batched_tokens", "must be >= max_num_seqs (%d), got %d", c.MaxNumSeqs, c.MaxNumBatchedTokens)
	}
	if !c.EnableChunkedPrefill && c.MaxNumBatchedTokens < c.MaxModelLen {
		bad("max_num_batched_tokens", "must be >= max_model_len (%d) when chunked prefill is off, got %d", c.MaxModelLen, c.MaxNumBatchedTokens)
	}
	if c.LongPrefillTokenThreshold < 0 {
		bad("long_prefill_token_threshold", "must be >= 0, got %d", c.LongPrefillTokenThreshold)
	}
	if c.LogStatsInterval <= 0 {
		bad("log_stats_interval", "must be positive")
	}
	if c.ReasoningTokens < 0 {
		bad("reasoning_tokens", "must be >= 0, got %d", c.ReasoningTokens)
	}
	if c.EmbeddingDims < 1 || c.EmbeddingDims > maxEmbeddingDims {
		bad("embedding_dims", "must be in [1, %d], got %d", maxEmbeddingDims, c.EmbeddingDims)
	}
	switch c.Tokenizer {
	case "", tokenizer.O200kBase, tokenizer.Cl100kBase:
	default:
		if !tokenizer.IsFile(c.Tokenizer) {
			bad("tokenizer", "want o200k_base, cl100k_base or the path of a tokenizer.json, got %q", c.Tokenizer)
		}
	}
}

// validateKV checks the KV cache's geometry and size.
func (c *Config) validateKV(bad badFunc) {
	if c.BlockSize < 1 || c.BlockSize > 1024 {
		bad("block_size", "must be in [1, 1024], got %d", c.BlockSize)
	}
	if c.NumLayers < 1 || c.NumKVHeads < 1 || c.HeadDim < 1 || c.KVDtypeBytes < 1 {
		bad("num_layers", "num_layers, num_kv_heads, head_dim and kv_dtype_bytes must be positive")
	}
	if c.SlidingWindowLayers < 0 || c.SlidingWindowLayers > c.NumLayers {
		bad("sliding_window_layers", "must be in [0, num_layers], got %d", c.SlidingWindowLayers)
	}
	if c.SlidingWindowLayers > 0 && c.SlidingWindow < 1 {
		bad("sliding_window", "must be positive when sliding_window_layers > 0")
	}
	if c.KVCacheMemoryBytes <= 0 && c.NumGPUBlocksOverride <= 0 {
		bad("kv_cache_memory_bytes", "must be positive (or set num_gpu_blocks_override)")
	}
	if c.NumGPUBlocksOverride < 0 {
		bad("num_gpu_blocks_override", "must be >= 0")
	}
}

// validateCosts checks the cost model.
func (c *Config) validateCosts(bad badFunc) {
	for _, f := range []struct {
		name string
		v    float64
	}{{"step_overhead_us", c.StepOverheadUS}, {"per_seq_us", c.PerSeqUS}, {"per_kv_token_ns", c.PerKVTokenNS},
		{"per_prefill_token_us", c.PerPrefillTokenUS}, {"jitter_frac", c.JitterFrac}} {
		if f.v < 0 || f.v != f.v {
			bad(f.name, "must be >= 0, got %v", f.v)
		}
	}
	if c.JitterFrac > 0.5 {
		bad("jitter_frac", "must be <= 0.5, got %v", c.JitterFrac)
	}
	if c.StepOverheadUS+c.PerSeqUS <= 0 {
		bad("step_overhead_us", "a step must cost something: step_overhead_us + per_seq_us > 0")
	}
	if c.MeanOutputTokens < 0 {
		bad("mean_output_tokens", "must be >= 0")
	}
}

// validateCalibration checks a twin's calibration block.
func (c *Config) validateCalibration(bad badFunc) {
	k := c.Calibration
	if k == nil {
		return
	}
	if len(k.Covariance) != len(k.Coefficients) {
		bad("calibration.covariance", "want %d rows (one per coefficient), got %d", len(k.Coefficients), len(k.Covariance))
	}
	for i, row := range k.Covariance {
		if len(row) != len(k.Coefficients) {
			bad("calibration.covariance", "row %d: want %d values, got %d", i, len(k.Coefficients), len(row))
			break
		}
		for _, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad("calibration.covariance", "row %d: not a finite number", i)
			}
		}
	}
}

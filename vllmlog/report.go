package vllmlog

import (
	"encoding/json"
	"math"

	"github.com/servebench/servebench/internal/decodelaw"
	"github.com/servebench/servebench/internal/kvcapacity"
)

// Schema is the version of the JSON report (bench logs --format json and
// logs.json). Renaming or removing a field bumps it.
const Schema = 2

// Report is what the logs say: one Run per server start found in them.
type Report struct {
	Schema int      `json:"schema"`
	Files  []string `json:"files"`
	Lines  int64    `json:"lines"` // lines read over all files
	Runs   []*Run   `json:"runs"`
	// FileStats says, per file, how much of it was understood, and names
	// the engine of a log that is not vLLM's.
	FileStats []FileStat `json:"file_stats"`
	// Warnings are problems of reading, not of the server: lines cut at
	// maxLineBytes, server starts beyond maxRuns, files of other engines,
	// files with nothing understood.
	Warnings []string `json:"warnings,omitempty"`
}

// FileStat is how much of one file the reader understood. A line is
// understood when one of the grammars of vLLM's line families recognised
// it (a record, a stats line, an access line, a traceback, a pasted
// command); lines holding no letter or digit are not counted either way.
type FileStat struct {
	File               string `json:"file"`
	Lines              int64  `json:"lines"`
	Understood         int64  `json:"understood"`
	NotUnderstood      int64  `json:"not_understood"`
	FirstNotUnderstood int64  `json:"first_not_understood_line,omitempty"`
	Example            string `json:"not_understood_example,omitempty"`
	// Engine names another engine whose log lines the file holds
	// ("SGLang", …); EngineLines counts them.
	Engine        string `json:"other_engine,omitempty"`
	EngineLines   int64  `json:"other_engine_lines,omitempty"`
	EngineExample string `json:"other_engine_example,omitempty"`
}

// Foreign reports whether the file is another engine's log: none of its
// lines gave a vLLM figure and some are recognisably that engine's.
func (f *FileStat) Foreign(rep *Report) bool {
	if f.Engine == "" {
		return false
	}
	for _, r := range rep.Runs {
		if r.File == f.File {
			return false
		}
	}
	return true
}

// Run is one server start: from its first line (the version banner or
// the argument dump) to the line before the next start.
type Run struct {
	File      string    `json:"file"`
	FirstLine int64     `json:"first_line"` // 1-based, in File
	LastLine  int64     `json:"last_line"`
	Config    Config    `json:"config"`
	Startup   Startup   `json:"startup"`
	KV        KVCache   `json:"kv_cache"`
	Runtime   Runtime   `json:"runtime"`
	Findings  []Finding `json:"findings"`
	// FinalError is the last error the log states: the exception that
	// ends a traceback (the frames above it folded into its finding), or
	// the last error message.
	FinalError string `json:"final_error,omitempty"`
	// Diagnoses name what the figures imply (a stalled engine, what holds
	// requests waiting, a decode-throughput change, why the engine failed),
	// each with the lines it rests on, or say that the log does not tell.
	Diagnoses []Diagnosis `json:"diagnoses,omitempty"`
	// Hints are tuning suggestions derived from the figures above.
	Hints []string `json:"hints"`
}

// Diagnosis is one conclusion drawn from the log, with its evidence.
type Diagnosis struct {
	// ID is stable: stalled, waiting-kv-full, waiting-max-num-seqs,
	// prefill-bound, v0-prefill-first, waiting-cause-unknown, preemption,
	// decode-decay, decode-rise, decode-held, kv-too-small, out-of-memory,
	// engine-failed.
	ID       string     `json:"id"`
	Text     string     `json:"text"`
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one log line a diagnosis rests on.
type Evidence struct {
	Line int64  `json:"line"`
	Time string `json:"time,omitempty"`
	What string `json:"what"` // the values read from the line
}

// Config is the server's configuration as the log states it. Absent
// fields were not printed. Notes explain the figures a reader asks about.
type Config struct {
	Version string `json:"vllm_version,omitempty"`
	// Generation is the engine, "V0" or "V1", as the log's line shapes
	// tell it; GenerationFrom names the line that decided.
	Generation      string `json:"engine_generation,omitempty"`
	GenerationFrom  string `json:"engine_generation_from,omitempty"`
	Model           string `json:"model,omitempty"`
	ServedModelName string `json:"served_model_name,omitempty"`
	Architecture    string `json:"architecture,omitempty"`
	NonDefaultArgs  []Arg  `json:"non_default_args,omitempty"`
	MaxModelLen     int    `json:"max_model_len,omitempty"`
	// MaxNumBatchedTokens is the engine's per-step token budget;
	// BatchedTokensSource says where it comes from ("log", "non-default
	// args", or how the KV check inferred it). BatchedTokensPrinted lists
	// every "Chunked prefill is enabled with max_num_batched_tokens=N"
	// line in order (the same setting can be printed twice, differently).
	MaxNumBatchedTokens  int    `json:"max_num_batched_tokens,omitempty"`
	BatchedTokensSource  string `json:"max_num_batched_tokens_source,omitempty"`
	BatchedTokensPrinted []int  `json:"max_num_batched_tokens_printed,omitempty"`
	MaxNumSeqs           int    `json:"max_num_seqs,omitempty"`
	MaxNumSeqsSource     string `json:"max_num_seqs_source,omitempty"`
	Dtype                string `json:"dtype,omitempty"`
	CheckpointDtype      string `json:"checkpoint_dtype,omitempty"` // the config's dtype when vLLM downcast it
	Quantization         string `json:"quantization,omitempty"`
	KVCacheDtype         string `json:"kv_cache_dtype,omitempty"`
	AttentionBackend     string `json:"attention_backend,omitempty"`
	MoEBackend           string `json:"moe_backend,omitempty"`
	TensorParallel       int    `json:"tensor_parallel_size,omitempty"`
	PipelineParallel     int    `json:"pipeline_parallel_size,omitempty"`
	DataParallel         int    `json:"data_parallel_size,omitempty"`
	ContextParallel      int    `json:"decode_context_parallel_size,omitempty"`
	ExpertParallel       *bool  `json:"expert_parallel,omitempty"`
	PrefixCaching        *bool  `json:"prefix_caching,omitempty"`
	ChunkedPrefill       *bool  `json:"chunked_prefill,omitempty"`
	AsyncScheduling      *bool  `json:"async_scheduling,omitempty"`
	EnforceEager         *bool  `json:"enforce_eager,omitempty"`
	CompilationMode      string `json:"compilation_mode,omitempty"`
	CUDAGraphMode        string `json:"cudagraph_mode,omitempty"`
	CaptureSizes         []int  `json:"cudagraph_capture_sizes,omitempty"`
	// CaptureSizeOverride is the "Overriding max cuda graph capture size
	// to N" value.
	CaptureSizeOverride  int      `json:"max_cudagraph_capture_size,omitempty"`
	GPUMemoryUtilization float64  `json:"gpu_memory_utilization,omitempty"`
	BlockSize            int      `json:"block_size,omitempty"`
	ServerURL            string   `json:"server_url,omitempty"`
	Routes               []Route  `json:"routes,omitempty"`
	Notes                []string `json:"notes,omitempty"`
}

// Arg is one non-default argument, its value as vLLM printed it.
type Arg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Route is one HTTP route the server announced.
type Route struct {
	Path    string `json:"path"`
	Methods string `json:"methods"`
}

// Startup is where start-up time went, from the log's own figures.
// Seconds are as printed; Phases divides the wall time into parts that do
// not overlap.
type Startup struct {
	Began           string  `json:"began,omitempty"` // first timestamp, "MM-DD HH:MM:SS"
	Ready           string  `json:"ready,omitempty"` // the server's "Starting vLLM server" timestamp
	WallS           float64 `json:"wall_s,omitempty"`
	DownloadS       float64 `json:"weight_download_s,omitempty"`
	WeightsS        float64 `json:"weight_loading_s,omitempty"`
	Shards          int     `json:"checkpoint_shards,omitempty"`
	ModelLoadS      float64 `json:"model_loading_s,omitempty"`
	ModelGiB        float64 `json:"model_loading_gib,omitempty"`
	DynamoS         float64 `json:"dynamo_transform_s,omitempty"`
	GraphCompileS   float64 `json:"graph_compile_s,omitempty"`
	CompileS        float64 `json:"torch_compile_s,omitempty"`
	CompileCacheHit *bool   `json:"torch_compile_cache_hit,omitempty"`
	ProfilingS      float64 `json:"profiling_s,omitempty"`
	CaptureS        float64 `json:"cuda_graph_capture_s,omitempty"`
	CaptureGiB      float64 `json:"cuda_graph_gib,omitempty"`
	GraphsPiecewise int     `json:"cuda_graphs_piecewise,omitempty"`
	GraphsFull      int     `json:"cuda_graphs_full,omitempty"`
	EngineInitS     float64 `json:"engine_init_s,omitempty"`
	WarmupS         float64 `json:"api_warmup_s,omitempty"` // multi-modal warm-up in the API server
	Phases          []Phase `json:"phases,omitempty"`
}

// Phase is one part of the start-up wall time.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	From    string  `json:"from"` // the log figures it is computed from
}

// KVCache is the memory and KV-cache section: the three figures vLLM
// prints and the check that recomputes them.
type KVCache struct {
	// AvailableGiB is the memory left for the KV cache; negative when the
	// model and activations left none (with several ranks, the smallest).
	AvailableGiB float64 `json:"available_gib,omitempty"`
	Tokens       int     `json:"tokens,omitempty"`
	// GPUBlocks and CPUBlocks are V0's "# GPU blocks: N, # CPU blocks: M"
	// (and early V1's "# GPU blocks: N").
	GPUBlocks int `json:"gpu_blocks,omitempty"`
	CPUBlocks int `json:"cpu_blocks,omitempty"`
	// ConcurrencyLen is the "for L tokens per request" of the concurrency
	// line (max_model_len).
	ConcurrencyLen int     `json:"concurrency_tokens_per_request,omitempty"`
	Concurrency    float64 `json:"max_concurrency,omitempty"`
	// ProfilingBlocks is the temporary cache of the CUDA-graph memory
	// profiling pass ("Overriding num_gpu_blocks=0 with
	// num_gpu_blocks_override=N"), not the real cache.
	ProfilingBlocks int      `json:"profiling_blocks,omitempty"`
	Check           *Check   `json:"check,omitempty"`
	Notes           []string `json:"notes,omitempty"`
}

// Check recomputes the KV cache's token capacity and concurrency from the
// model's layers.
type Check struct {
	Model  string `json:"model"`  // the layer description used
	Source string `json:"source"` // built in, a config.json, or matched by architecture
	// Skipped says why nothing was recomputed; the other fields are then
	// empty.
	Skipped          string       `json:"skipped,omitempty"`
	BlockSize        int          `json:"block_size,omitempty"`
	MaxModelLen      int          `json:"max_model_len,omitempty"`
	Budget           int          `json:"max_num_batched_tokens,omitempty"`
	KVBytes          int          `json:"kv_element_bytes,omitempty"`
	Groups           []CheckGroup `json:"groups,omitempty"`
	PageBytes        int64        `json:"page_bytes,omitempty"`
	BlockBytes       int64        `json:"block_bytes,omitempty"`
	BlocksMin        int          `json:"blocks_from_memory_min,omitempty"` // the pool the printed GiB holds, within its rounding
	BlocksMax        int          `json:"blocks_from_memory_max,omitempty"`
	TokensMin        int          `json:"tokens_min,omitempty"` // "GPU KV cache size" predicted from the GiB
	TokensMax        int          `json:"tokens_max,omitempty"`
	Blocks           int          `json:"blocks,omitempty"` // the pool the printed token count implies (smallest)
	BlocksPerRequest int          `json:"blocks_per_request,omitempty"`
	Concurrency      float64      `json:"concurrency,omitempty"`       // recomputed from Blocks
	NaiveConcurrency float64      `json:"naive_concurrency,omitempty"` // printed tokens ÷ max_model_len
	TokensAgree      bool         `json:"tokens_agree"`
	ConcurrencyAgree bool         `json:"concurrency_agrees"`
	Explanation      []string     `json:"explanation,omitempty"`

	lay *layout // the model and geometry the figures were computed with
}

// CheckGroup is one KV-cache group of the check.
type CheckGroup struct {
	Layers        int `json:"layers"`
	SlidingWindow int `json:"sliding_window,omitempty"`
	BlockSize     int `json:"block_size"`
	MaxBlocks     int `json:"max_blocks_per_request"`
}

// Layout returns the model's attention layers (heads per GPU) and the
// KV-cache geometry the check computed its figures with; false when the
// check did not run.
func (c *Check) Layout() (kvcapacity.Model, kvcapacity.Geometry, bool) {
	if c == nil || c.lay == nil {
		return kvcapacity.Model{}, kvcapacity.Geometry{}, false
	}
	return c.lay.model, c.lay.geom, true
}

// Agrees reports whether the check ran and reproduced both printed figures.
func (c *Check) Agrees() bool {
	return c != nil && c.Skipped == "" && c.TokensAgree && c.ConcurrencyAgree
}

// Runtime is what the server did after start-up: its periodic stats lines
// per engine and its access lines.
type Runtime struct {
	Engines  []*Series    `json:"engines,omitempty"`
	Requests []RouteCount `json:"requests,omitempty"`
	// Decay is the throughput change over the longest stretch of steady
	// decoding, on the first engine that has one.
	Decay *Decay `json:"decay,omitempty"`
}

// Series is one engine's periodic "Engine 000: Avg prompt throughput …"
// lines. It holds at most maxPoints points: beyond that, neighbouring
// points are averaged in pairs (Stride lines per point), so memory stays
// bounded however long the log; First and Last are the exact end lines.
type Series struct {
	Engine      string  `json:"engine"` // "000", or "aggregated"
	Lines       int64   `json:"lines"`
	Stride      int     `json:"stride"`
	Points      []Point `json:"points"`
	First       Point   `json:"first"`
	Last        Point   `json:"last"`
	MaxRunning  float64 `json:"max_running"`
	MaxWaiting  float64 `json:"max_waiting"`
	MaxKVPerc   float64 `json:"max_kv_usage_perc"`
	Preemptions float64 `json:"preemptions"`

	pending  *Point // a point waiting for its pair while Stride > 1
	pendingN int
}

// Point is one stats line (or the mean of Stride of them). Figures the
// line did not print are NaN and absent from the JSON.
type Point struct {
	Line          int64   // the stats line's line number (the last of a mean)
	Time          string  // "MM-DD HH:MM:SS"
	OffsetS       float64 // seconds after the run's first timestamp
	PromptTPS     float64 // tokens/s
	GenerationTPS float64 // tokens/s
	Running       float64
	Waiting       float64
	Preemptions   float64 // in the interval
	Swapped       float64 // V0: requests swapped out to CPU memory
	KVUsagePerc   float64
	PrefixHitPerc float64
}

// MarshalJSON writes the known figures only.
func (p Point) MarshalJSON() ([]byte, error) {
	opt := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		Line          int64    `json:"line,omitempty"`
		Time          string   `json:"time,omitempty"`
		OffsetS       *float64 `json:"offset_s,omitempty"`
		PromptTPS     *float64 `json:"prompt_tokens_per_s,omitempty"`
		GenerationTPS *float64 `json:"generation_tokens_per_s,omitempty"`
		Running       *float64 `json:"running,omitempty"`
		Waiting       *float64 `json:"waiting,omitempty"`
		Preemptions   *float64 `json:"preemptions,omitempty"`
		Swapped       *float64 `json:"swapped,omitempty"`
		KVUsagePerc   *float64 `json:"kv_usage_perc,omitempty"`
		PrefixHitPerc *float64 `json:"prefix_cache_hit_perc,omitempty"`
	}{p.Line, p.Time, opt(p.OffsetS), opt(p.PromptTPS), opt(p.GenerationTPS), opt(p.Running), opt(p.Waiting),
		opt(p.Preemptions), opt(p.Swapped), opt(p.KVUsagePerc), opt(p.PrefixHitPerc)})
}

// RouteCount is how many access lines named one method, path and status.
type RouteCount struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	Count  int64  `json:"count"`
}

// Decay is the throughput change over the longest stretch of stats lines
// with the same non-zero number of running requests, nothing waiting and
// no prefill to speak of: decoding only, so any change is the decode
// step's cost, not load.
type Decay struct {
	Engine  string  `json:"engine"`
	From    string  `json:"from"`
	To      string  `json:"to"`
	Seconds float64 `json:"seconds"`
	Points  int     `json:"points"`
	Streams float64 `json:"streams"` // the running count throughout
	// Start and end figures of the stretch.
	StartTPS    float64 `json:"start_generation_tokens_per_s"`
	EndTPS      float64 `json:"end_generation_tokens_per_s"`
	Change      float64 `json:"change"` // EndTPS / StartTPS − 1
	StartKVPerc float64 `json:"start_kv_usage_perc"`
	EndKVPerc   float64 `json:"end_kv_usage_perc"`
	// Context in flight (tokens summed over the streams) estimated from KV
	// usage and the cache's geometry; ContextBasis says how.
	StartContext float64 `json:"start_context_tokens,omitempty"`
	EndContext   float64 `json:"end_context_tokens,omitempty"`
	ContextBasis string  `json:"context_basis,omitempty"`
	// Fit is the decode law, per-stream time per token ≈ a + b·context,
	// over the stretch's points (nil with fewer than three, or no spread).
	Fit *decodelaw.Fit `json:"decode_fit,omitempty"`
	// KVShareEnd is the share of the last point's time per token that the
	// fitted law attributes to reading context: b·context / (a + b·context).
	KVShareEnd  float64  `json:"kv_share_end,omitempty"`
	Explanation []string `json:"explanation"`

	points []Point // the stretch, for the plot
	ctx    []float64
}

// MarshalJSON leaves out the figures the stats lines did not print.
func (d Decay) MarshalJSON() ([]byte, error) {
	type plain Decay
	opt := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		plain
		Streams     *float64 `json:"streams,omitempty"`
		StartKVPerc *float64 `json:"start_kv_usage_perc,omitempty"`
		EndKVPerc   *float64 `json:"end_kv_usage_perc,omitempty"`
	}{plain(d), opt(d.Streams), opt(d.StartKVPerc), opt(d.EndKVPerc)})
}

// Finding is one kind of warning or error, grouped over its occurrences.
type Finding struct {
	Level     string `json:"level"` // WARNING, ERROR, CRITICAL
	Count     int64  `json:"count"`
	FirstLine int64  `json:"first_line"`
	Source    string `json:"source,omitempty"` // file.py:line of the first occurrence
	Message   string `json:"message"`          // the first occurrence, cut at 300 characters
	// Verdict is "harmless", "expected", "performance" or "error"; empty
	// when the message is not one servebench knows.
	Verdict     string `json:"verdict,omitempty"`
	Explanation string `json:"explanation,omitempty"`
	// Frames is the number of traceback frames folded into this finding
	// (the exception that ended the traceback).
	Frames int `json:"traceback_frames,omitempty"`
}

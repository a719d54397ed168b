package vllmlog

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// matcher recognises one kind of line: key is a substring the message
// must hold (a cheap filter), re takes the figures out, fn records them.
type matcher struct {
	key string
	re  *regexp.Regexp
	fn  func(p *Parser, r *run, m []string, rec *record)
}

// num reads a printed figure; what is not a finite number reads as 0.
func num(s string) float64 {
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return f
}

func integer(s string) int {
	n, _ := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	return n
}

func yes(b bool) *bool { return &b }

// once reports whether a figure printed once per server start is seen for
// the first time. A different value later (another worker, an excerpt of
// another server pasted into the log) is noted, not taken.
func (r *run) once(what, printed string) bool {
	prev, seen := r.printed[what]
	if !seen {
		r.printed[what] = printed
		return true
	}
	if prev != printed && len(r.conflicts) < 10 {
		r.conflicts = append(r.conflicts, fmt.Sprintf("%s %s, then %s", what, prev, printed))
	}
	return false
}

// mark notes that a timestamped line showed this server starting: a start
// marker after it begins a new run. Pasted lines without a timestamp do
// not count, so a page's summary of figures does not split a run.
func (r *run) mark(rec *record) {
	if !rec.at.IsZero() {
		r.substantial = true
	}
}

// matchers are tried in order; the first whose key and pattern match
// takes the line.
var matchers = []matcher{
	{"API server version", regexp.MustCompile(`vLLM API server version (\S+)`), func(p *Parser, _ *run, m []string, rec *record) {
		p.startMarker(markBanner, rec)
		p.cur.Config.Version = m[1]
	}},
	{"version ", regexp.MustCompile(`^[^A-Za-z0-9]*version (\d+\.\d+\S*)$`), func(p *Parser, _ *run, m []string, rec *record) {
		p.startMarker(markBanner, rec)
		p.cur.Config.Version = m[1]
	}},
	{"args: Namespace(", regexp.MustCompile(`^args: Namespace\((.*?)\)?$`), func(p *Parser, _ *run, m []string, rec *record) {
		p.startMarker(markArgs, rec)
		r := p.cur
		r.mark(rec)
		c := &r.Config
		applyArgs(c, pyKeywords(m[1]))
		c.NonDefaultArgs = nil // the dump lists every argument, defaults included
		if c.BatchedTokensSource == srcNonDefault {
			c.BatchedTokensSource = srcNamespace
		}
		if c.MaxNumSeqsSource == srcNonDefault {
			c.MaxNumSeqsSource = srcNamespace
		}
	}},
	{"model ", regexp.MustCompile(`^[^A-Za-z0-9]*model (\S+)$`), func(_ *Parser, r *run, m []string, _ *record) {
		if r.Config.Model == "" {
			r.Config.Model = m[1]
		}
	}},
	{"non-default args:", regexp.MustCompile(`non-default args: (.*)$`), func(p *Parser, _ *run, m []string, rec *record) {
		p.startMarker(markArgs, rec)
		r := p.cur
		r.sawArgs = true
		r.mark(rec)
		text := strings.TrimSpace(m[1])
		if text == "{" { // pasted with one argument per line
			r.args = &strings.Builder{}
			r.args.WriteString(text)
			return
		}
		applyArgs(&r.Config, pyDict(text))
	}},
	{"LLM engine", regexp.MustCompile(`Initializing an? (V0 |V1 )?LLM engine (?:\(v([^)]+)\) )?with config: (.*)$`), func(_ *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		if r.Config.Version == "" {
			r.Config.Version = m[2]
		}
		switch {
		case m[1] != "":
			r.markGeneration(strings.TrimSpace(m[1]), true, "\"Initializing a "+strings.TrimSpace(m[1])+" LLM engine\"")
		case m[2] == "" || versionBefore(m[2], 0, 8):
			r.markGeneration("V0", true, "\"Initializing an LLM engine\", as vLLM before 0.8 printed it")
		}
		applyEngineConfig(&r.Config, pyKeywords(m[3]))
		if t := strings.TrimSpace(m[3]); !strings.HasSuffix(t, ")") && !strings.HasSuffix(t, "}") {
			r.cfgTail = t // cut or wrapped: the next raw line may continue it
		}
	}},
	{"Resolved architecture:", regexp.MustCompile(`Resolved architecture: (\S+)`), func(_ *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		r.Config.Architecture = m[1]
	}},
	{"Using max model len", regexp.MustCompile(`Using max model len (\d+)`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Config.MaxModelLen = integer(m[1])
	}},
	{"max_num_batched_tokens=", regexp.MustCompile(`Chunked prefill is enabled with max_num_batched_tokens=(\d+)`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Config.ChunkedPrefill = yes(true)
		if len(r.Config.BatchedTokensPrinted) < 8 {
			r.Config.BatchedTokensPrinted = append(r.Config.BatchedTokensPrinted, integer(m[1]))
		}
	}},
	{"Asynchronous scheduling is", regexp.MustCompile(`Asynchronous scheduling is (enabled|disabled)`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Config.AsyncScheduling = yes(m[1] == "enabled")
	}},
	{"cuda graph capture size", regexp.MustCompile(`Overriding max cuda graph capture size to (\d+)`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Config.CaptureSizeOverride = integer(m[1])
	}},
	{"asting", regexp.MustCompile(`^(?:Downcasting|Upcasting|Casting) (?:torch\.)?(\w+) to (?:torch\.)?(\w+)`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Config.CheckpointDtype, r.Config.Dtype = m[1], m[2]
	}},
	{"MoE", regexp.MustCompile(`^Using '?([A-Za-z0-9_]+)'? (?:[A-Za-z0-9]+ )?MoE backend|^Using ([A-Za-z0-9_]+) backend for (?:[A-Za-z]+ )?MoE`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Config.MoEBackend = strings.ToUpper(m[1] + m[2])
	}},
	{"backend", regexp.MustCompile(`^Using (?:AttentionBackendEnum\.)?([A-Z][A-Z0-9_]+) (?:attention )?backend|^Using (Flash Attention|FlashInfer|Triton|XFormers|Torch SDPA) backend`), func(_ *Parser, r *run, m []string, _ *record) {
		if r.Config.AttentionBackend == "" {
			r.Config.AttentionBackend = strings.ToUpper(strings.ReplaceAll(m[1]+m[2], " ", "_"))
		}
	}},
	{"backend", regexp.MustCompile(`^Using (\w+) backend\.?$`), func(_ *Parser, r *run, m []string, rec *record) {
		if strings.Contains(rec.source, "fp4") || strings.Contains(rec.source, "fp8") || strings.Contains(rec.source, "moe") {
			r.Config.MoEBackend = strings.ToUpper(m[1])
		}
	}},
	{"downloading weights", regexp.MustCompile(`Time spent downloading weights for \S+: ([\d.]+) seconds`), func(_ *Parser, r *run, m []string, rec *record) {
		if r.otherRank(rec) {
			return // each rank prints its own; one is the server's
		}
		r.Startup.DownloadS += num(m[1])
	}},
	{"Loading model weights took", regexp.MustCompile(`Loading model weights took ([\d.]+) GB`), func(p *Parser, r *run, m []string, rec *record) {
		r = p.loadPhase(r)
		r.mark(rec)
		if r.once("Loading model weights took", m[1]+" GB") {
			r.Startup.ModelGiB = num(m[1])
		}
	}},
	{"Loading weights took", regexp.MustCompile(`Loading weights took ([\d.]+) seconds`), func(_ *Parser, r *run, m []string, _ *record) {
		if r.once("Loading weights took", m[1]+" seconds") {
			r.Startup.WeightsS = num(m[1])
		}
	}},
	{"Model loading took", regexp.MustCompile(`Model loading took ([\d.]+) ?Gi?B(?: memory)? and ([\d.]+) seconds`), func(p *Parser, r *run, m []string, rec *record) {
		r = p.loadPhase(r)
		r.mark(rec)
		if r.once("Model loading took", m[1]+" GiB and "+m[2]+" seconds") {
			r.Startup.ModelGiB, r.Startup.ModelLoadS = num(m[1]), num(m[2])
		}
	}},
	{"checkpoint shards", regexp.MustCompile(`checkpoint shards:\s*\d+% Completed\s*\|?\s*(\d+)/(\d+)`), func(_ *Parser, r *run, m []string, _ *record) {
		if m[1] == m[2] {
			r.Startup.Shards = integer(m[2])
		}
	}},
	{"Starting to load model", regexp.MustCompile(`Starting to load model`), func(_ *Parser, r *run, _ []string, rec *record) {
		r.mark(rec)
		if !rec.at.IsZero() && r.loadStart.IsZero() {
			r.loadStart = rec.at
		}
	}},
	{"Dynamo bytecode transform time", regexp.MustCompile(`Dynamo bytecode transform time: ([\d.]+) s`), func(_ *Parser, r *run, m []string, rec *record) {
		if r.otherRank(rec) {
			return // each rank prints its own; one is the server's
		}
		r.Startup.DynamoS += num(m[1])
	}},
	{"Compiling a graph for", regexp.MustCompile(`Compiling a graph for .* takes ([\d.]+) s`), func(_ *Parser, r *run, m []string, rec *record) {
		if r.otherRank(rec) {
			return // each rank prints its own; one is the server's
		}
		r.Startup.GraphCompileS += num(m[1])
		r.Startup.CompileCacheHit = yes(false)
	}},
	{"from the cache", regexp.MustCompile(`Directly load the compiled graph\(s\) for .* from the cache, took ([\d.]+) s`), func(_ *Parser, r *run, m []string, rec *record) {
		if r.otherRank(rec) {
			return // each rank prints its own; one is the server's
		}
		r.Startup.GraphCompileS += num(m[1])
		if r.Startup.CompileCacheHit == nil {
			r.Startup.CompileCacheHit = yes(true)
		}
	}},
	{"torch.compile t", regexp.MustCompile(`torch\.compile (?:takes|took) ([\d.]+) s in total`), func(_ *Parser, r *run, m []string, _ *record) {
		if r.once("torch.compile took", m[1]+" s") {
			r.Startup.CompileS = num(m[1])
		}
	}},
	{"profiling", regexp.MustCompile(`(?:Initial profiling/warmup run took|Memory profiling takes) ([\d.]+) s`), func(_ *Parser, r *run, m []string, rec *record) {
		if r.otherRank(rec) {
			return // each rank prints its own; one is the server's
		}
		r.Startup.ProfilingS += num(m[1])
	}},
	{"Graph capturing finished", regexp.MustCompile(`Graph capturing finished in ([\d.]+) secs?, took ([\d.]+) GiB`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Startup.CaptureS, r.Startup.CaptureGiB = num(m[1]), num(m[2])
	}},
	{"Capturing CUDA graphs", regexp.MustCompile(`Capturing CUDA graphs \(([^)]*)\):.*?(\d+)/(\d+)`), func(_ *Parser, r *run, m []string, _ *record) {
		if m[2] != m[3] {
			return
		}
		if strings.Contains(m[1], "PIECEWISE") {
			r.Startup.GraphsPiecewise = integer(m[3])
		} else if strings.Contains(m[1], "FULL") {
			r.Startup.GraphsFull = integer(m[3])
		}
	}},
	{"Profiling CUDA graph memory", regexp.MustCompile(`PIECEWISE=(\d+) \(largest=\d+\), FULL=(\d+)`), func(_ *Parser, r *run, m []string, _ *record) {
		if r.Startup.GraphsPiecewise == 0 && r.Startup.GraphsFull == 0 {
			r.Startup.GraphsPiecewise, r.Startup.GraphsFull = integer(m[1]), integer(m[2])
		}
	}},
	{"init engine", regexp.MustCompile(`init engine \(profile, create kv cache, warmup model\) took ([\d.]+) seconds`), func(_ *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		if r.once("init engine took", m[1]+" seconds") {
			r.Startup.EngineInitS = num(m[1])
			if !rec.at.IsZero() {
				r.initAt = rec.at
			}
		}
	}},
	{"Multi-modal warmup completed", regexp.MustCompile(`Multi-modal warmup completed in ([\d.]+) ?s`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Startup.WarmupS = num(m[1])
	}},
	{"Starting vLLM", regexp.MustCompile(`Starting vLLM (?:API )?server (?:\d+ )?on (\S+)`), func(_ *Parser, r *run, m []string, rec *record) {
		r.Config.ServerURL = m[1]
		if !rec.at.IsZero() && r.ready.IsZero() {
			r.ready = rec.at
			r.Startup.Ready = rec.stamp
		}
	}},
	{"Route:", regexp.MustCompile(`Route: (\S+), Methods: (.+)$`), func(_ *Parser, r *run, m []string, _ *record) {
		for _, rt := range r.Config.Routes {
			if rt.Path == m[1] && rt.Methods == m[2] {
				return
			}
		}
		if len(r.Config.Routes) < maxRoutes {
			r.Config.Routes = append(r.Config.Routes, Route{Path: m[1], Methods: m[2]})
		}
	}},
	{"Available KV cache memory:", regexp.MustCompile(`Available KV cache memory: (-?[\d.]+) GiB`), func(p *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		r.available(rec, m[1])
		p.negativeKV(r, rec, m[1])
	}},
	{"GPU KV cache size:", regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`), func(_ *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		if r.once("GPU KV cache size", m[1]+" tokens") {
			r.KV.Tokens = integer(m[1])
		}
		if c := concurrencyRe.FindStringSubmatch(rec.msg); c != nil { // newer versions print both on one line
			r.concurrency(c)
		}
	}},
	{"Maximum concurrency for", concurrencyRe, func(_ *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		r.concurrency(m)
	}},
	{"blocks: ", regexp.MustCompile(`^(?:# )?(?:GPU|cuda) blocks: (\d+)(?:, # CPU blocks: (\d+))?`), func(p *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		if r.once("GPU blocks", m[1]) {
			r.KV.GPUBlocks, r.gpuBlocksSeen = integer(m[1]), true
			if m[1] == "0" {
				r.errs[errKVTooSmall] = p.evidence(rec, "0 GPU blocks for the KV cache")
			}
		}
		if m[2] != "" && r.once("CPU blocks", m[2]) {
			r.KV.CPUBlocks = integer(m[2])
		}
		if m[2] != "" {
			r.markGeneration("V0", false, "\"# GPU blocks: N, # CPU blocks: M\"")
		}
	}},
	{"kv_cache_size=", regexp.MustCompile(`Memory profiling results: .*kv_cache_size=(-?[\d.]+)GiB`), func(p *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		r.available(rec, m[1])
		p.negativeKV(r, rec, m[1])
		r.markGeneration("V0", false, "\"Memory profiling results\"")
	}},
	{"reserved for KV Cache is", regexp.MustCompile(`the rest of the memory reserved for KV Cache is (-?[\d.]+) ?GiB`), func(p *Parser, r *run, m []string, rec *record) {
		r.mark(rec)
		r.available(rec, m[1])
		p.negativeKV(r, rec, m[1])
	}},
	{"gpu_memory_utilization (", regexp.MustCompile(`total_gpu_memory \(([\d.]+) ?GiB\) x gpu_memory_utilization \(([\d.]+)\)`), func(_ *Parser, r *run, m []string, _ *record) {
		r.Config.GPUMemoryUtilization = num(m[2])
	}},
	{"max seq len (", regexp.MustCompile(`max seq len \((\d+)\)(?: is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\))?`), func(_ *Parser, r *run, m []string, _ *record) {
		if r.Config.MaxModelLen == 0 {
			r.Config.MaxModelLen = integer(m[1])
		}
		if m[2] != "" && r.KV.Tokens == 0 {
			r.KV.Tokens = integer(m[2])
		}
	}},
	{"num_gpu_blocks_override=", regexp.MustCompile(`Overriding num_gpu_blocks=\d+ with num_gpu_blocks_override=(\d+)`), func(_ *Parser, r *run, m []string, _ *record) {
		r.KV.ProfilingBlocks = integer(m[1])
	}},
	{"CUDA graph memory profiling", regexp.MustCompile(`increase --gpu-memory-utilization from ([\d.]+) to ([\d.]+)`), func(_ *Parser, r *run, m []string, _ *record) {
		if r.Config.GPUMemoryUtilization == 0 {
			r.Config.GPUMemoryUtilization = num(m[1])
		}
		r.memoryNotes = appendOnce(r.memoryNotes, fmt.Sprintf("vLLM announces that a later version counts CUDA-graph memory before sizing the KV cache; to keep this cache size then, raise --gpu-memory-utilization from %s to %s.",
			strings.TrimRight(strings.TrimRight(m[1], "0"), "."), m[2]))
	}},
	{"Enforce eager set", regexp.MustCompile(`Enforce eager set`), func(_ *Parser, r *run, _ []string, _ *record) {
		r.Config.EnforceEager = yes(true)
	}},
	{"Cudagraph is disabled", regexp.MustCompile(`Cudagraph is disabled( under eager mode)?`), func(_ *Parser, r *run, m []string, _ *record) {
		if r.Config.CUDAGraphMode == "" {
			r.Config.CUDAGraphMode = "NONE"
		}
		if m[1] != "" {
			r.Config.EnforceEager = yes(true)
		}
	}},
}

// concurrencyRe is the "Maximum concurrency for L tokens per request: Xx"
// line (L is max_model_len).
var concurrencyRe = regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x`)

func (r *run) concurrency(m []string) {
	if r.once("Maximum concurrency", "for "+m[1]+" tokens per request: "+m[2]+"x") {
		r.KV.ConcurrencyLen, r.KV.Concurrency = integer(m[1]), num(m[2])
	}
}

// available records the memory left for the KV cache. Worker ranks of one
// server each print theirs: the smallest decides the cache, so it is kept.
// The same figure printed again by the same process is another server's
// (see once).
func (r *run) available(rec *record, printed string) {
	if isRank(rec.proc) {
		if r.availByRank == nil {
			r.availByRank = map[string]float64{}
		}
		v := numSigned(printed)
		r.availByRank[rec.proc] = v
		if len(r.availByRank) == 1 || v < r.KV.AvailableGiB {
			r.availText, r.KV.AvailableGiB = strings.TrimPrefix(printed, "-"), v
		}
		return
	}
	if r.once("Available KV cache memory", printed+" GiB") {
		r.availText, r.KV.AvailableGiB = strings.TrimPrefix(printed, "-"), numSigned(printed)
	}
}

// negativeKV notes a run left no memory for its KV cache.
func (p *Parser) negativeKV(r *run, rec *record, printed string) {
	if numSigned(printed) <= 0 {
		ev := p.evidence(rec, "memory for the KV cache: "+printed+" GiB")
		if _, seen := r.errs[errKVTooSmall]; !seen {
			r.errs[errKVTooSmall] = ev
		}
		r.negEv = ev
	}
}

// otherRank reports whether a per-rank line comes from a rank other than
// the first one seen: each rank of a tensor-parallel server prints its own
// timings, which are not to be added up.
func (r *run) otherRank(rec *record) bool {
	if !isRank(rec.proc) {
		return false
	}
	if r.firstRank == "" {
		r.firstRank = rec.proc
	}
	return rec.proc != r.firstRank
}

// isRank reports whether a process prefix names one rank of several
// ("Worker_TP1", "VllmWorker" with its rank, "RayWorkerWrapper").
func isRank(proc string) bool {
	return strings.HasPrefix(proc, "Worker_") || strings.HasPrefix(proc, "VllmWorker") || strings.HasPrefix(proc, "RayWorker")
}

// numSigned reads a figure that may be negative.
func numSigned(s string) float64 {
	if strings.HasPrefix(s, "-") {
		return -num(s[1:])
	}
	return num(s)
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Sources of a setting taken from an argument dump.
const (
	srcNonDefault = "non-default args"
	srcNamespace  = "the args dump"
	srcCommand    = "the pasted command line"
)

// fromArgs reports whether a setting's source is the server's own
// argument dump.
func fromArgs(src string) bool { return src == srcNonDefault || src == srcNamespace }

// applyArgs records the "non-default args" dump.
func applyArgs(c *Config, items []item) {
	c.NonDefaultArgs = c.NonDefaultArgs[:0]
	for _, it := range items {
		v := it.value
		if len(v) > maxValue {
			v = v[:maxValue] + "…"
		}
		c.NonDefaultArgs = append(c.NonDefaultArgs, Arg{Name: it.key, Value: v})
		switch it.key {
		case "model":
			c.Model = pyString(it.value)
		case "served_model_name":
			if l := pyList(it.value); len(l) > 0 {
				c.ServedModelName = pyString(l[0])
			} else {
				c.ServedModelName = pyString(it.value)
			}
		case "max_model_len":
			if n, ok := pyInt(it.value); ok {
				c.MaxModelLen = n
			}
		case "max_num_batched_tokens":
			if n, ok := pyInt(it.value); ok {
				c.MaxNumBatchedTokens, c.BatchedTokensSource = n, srcNonDefault
			}
		case "max_num_seqs":
			if n, ok := pyInt(it.value); ok {
				c.MaxNumSeqs, c.MaxNumSeqsSource = n, srcNonDefault
			}
		case "gpu_memory_utilization":
			c.GPUMemoryUtilization, _ = pyFloat(it.value)
		case "block_size":
			c.BlockSize, _ = pyInt(it.value)
		case "enable_expert_parallel":
			if b, ok := pyBool(it.value); ok {
				c.ExpertParallel = yes(b)
			}
		default:
			applyEngineConfig(c, []item{it})
		}
	}
}

// applyEngineConfig records the settings of the engine's "with config:"
// line (or of a bare "key=value" line). It reports whether any was known.
func applyEngineConfig(c *Config, items []item) bool {
	known := false
	setInt := func(dst *int, v string) {
		if n, ok := pyInt(v); ok {
			*dst = n
		}
	}
	setBool := func(dst **bool, v string) {
		if b, ok := pyBool(v); ok {
			*dst = yes(b)
		}
	}
	for _, it := range items {
		v := it.value
		switch it.key {
		case "model":
			if c.Model == "" {
				c.Model = pyString(v)
			}
		case "served_model_name":
			if c.ServedModelName == "" {
				c.ServedModelName = pyString(v)
			}
		case "dtype":
			c.Dtype = strings.TrimPrefix(pyString(v), "torch.")
		case "max_seq_len":
			if c.MaxModelLen == 0 {
				setInt(&c.MaxModelLen, v)
			}
		case "tensor_parallel_size":
			setInt(&c.TensorParallel, v)
		case "pipeline_parallel_size":
			setInt(&c.PipelineParallel, v)
		case "data_parallel_size":
			setInt(&c.DataParallel, v)
		case "decode_context_parallel_size":
			setInt(&c.ContextParallel, v)
		case "quantization":
			c.Quantization = pyString(v)
			if c.Quantization == "None" {
				c.Quantization = "none"
			}
		case "kv_cache_dtype":
			c.KVCacheDtype = pyString(v)
		case "enforce_eager":
			setBool(&c.EnforceEager, v)
		case "enable_prefix_caching":
			setBool(&c.PrefixCaching, v)
		case "enable_chunked_prefill", "chunked_prefill_enabled":
			setBool(&c.ChunkedPrefill, v)
		case "async_scheduling":
			setBool(&c.AsyncScheduling, v)
		case "cudagraph_mode":
			c.CUDAGraphMode = pyEnum(v)
		case "compilation_config":
			cc := pyDict(v)
			if mode, ok := lookup(cc, "mode"); ok && mode != "None" {
				c.CompilationMode = pyEnum(mode)
			} else if level, ok := lookup(cc, "level"); ok && level != "None" {
				c.CompilationMode = map[string]string{"0": "NONE", "1": "STOCK_TORCH_COMPILE", "2": "DYNAMO_TRACE_ONCE", "3": "VLLM_COMPILE"}[level]
			}
			if mode, ok := lookup(cc, "cudagraph_mode"); ok {
				c.CUDAGraphMode = pyEnum(mode)
			}
			if sizes, ok := lookup(cc, "cudagraph_capture_sizes"); ok {
				c.CaptureSizes = c.CaptureSizes[:0]
				for _, e := range pyList(sizes) {
					if n, ok := pyInt(e); ok && len(c.CaptureSizes) < 1024 {
						c.CaptureSizes = append(c.CaptureSizes, n)
					}
				}
			}
			if m, ok := lookup(cc, "max_cudagraph_capture_size"); ok && c.CaptureSizeOverride == 0 {
				setInt(&c.CaptureSizeOverride, m)
			}
		default:
			continue
		}
		known = true
	}
	return known
}

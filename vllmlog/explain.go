package vllmlog

import (
	"regexp"
	"strings"
)

// Verdicts of a finding.
const (
	VerdictHarmless    = "harmless"    // nothing to do
	VerdictExpected    = "expected"    // a consequence of the model or the settings chosen
	VerdictPerformance = "performance" // works, but costs speed; worth acting on
	VerdictError       = "error"       // something failed
)

// known is a warning or error servebench can explain.
type known struct {
	id      string
	key     string // a literal the message must contain (a cheap filter)
	re      *regexp.Regexp
	verdict string
	explain func(m []string) string
}

func say(s string) func([]string) string { return func([]string) string { return s } }

// catalogue holds the explanations, one sentence each, for operators.
var catalogue = []known{
	{"safetensors-local-path", "Repo id must be", regexp.MustCompile(`Error retrieving safetensors: Repo id must be in the form`), VerdictHarmless,
		say("vLLM asked the Hugging Face Hub for the checkpoint's metadata using a local directory as the repository name; the Hub refuses (vLLM retries once), and the weights are then read from the directory as usual, so start-up is unaffected.")},
	{"mxfp4-linear", "MXFP4 linear layer", regexp.MustCompile(`MXFP4 linear layer is not implemented`), VerdictExpected,
		say("Only gpt-oss's MoE expert weights are stored in MXFP4; its other linear layers are plain bf16 in the checkpoint, so vLLM loads them unquantized, as intended.")},
	{"mxfp4-attention", "MXFP4 attention layer", regexp.MustCompile(`MXFP4 attention layer is not implemented`), VerdictExpected,
		say("gpt-oss's attention layers are not MXFP4 in the checkpoint and run in bf16; nothing is lost.")},
	{"no-native-fp4", "native support for FP4", regexp.MustCompile(`does not have native support for FP4 computation`), VerdictPerformance,
		say("This GPU has no FP4 tensor cores (Blackwell-class GPUs have them), so vLLM keeps the weights in 4 bits to save memory and expands them inside weight-only Marlin kernels at every matrix multiply: memory use is as planned, but compute-heavy work (large batches, long prefills) runs slower than on native FP4 hardware.")},
	{"no-native-fp8", "native support for FP8", regexp.MustCompile(`does not have native support for FP8 computation`), VerdictPerformance,
		say("This GPU has no FP8 tensor cores (Ada and Hopper have them, A100 does not), so FP8 weights are expanded in weight-only Marlin kernels: the weights take half the memory of bf16, but compute-heavy work gets no FP8 speed-up and can be slower than bf16.")},
	{"gpt-oss-tool-choice", "enable-auto-tool-choice", regexp.MustCompile(`For gpt-oss, we ignore --enable-auto-tool-choice`), VerdictHarmless,
		say("gpt-oss always parses tool calls through its own format, so the --enable-auto-tool-choice flag has no effect.")},
	{"host-ip", "HOST_IP", regexp.MustCompile(`The environment variable HOST_IP is deprecated and ignored`), VerdictHarmless,
		say("HOST_IP is set in the environment (container runtimes often set it) and vLLM ignores it; set VLLM_HOST_IP only if the processes of a multi-node server must use a particular address.")},
	{"generation-config", "generation_config.json", regexp.MustCompile("Default vLLM sampling parameters have been overridden by the model's `?generation_config.json`?:? `?(\\{[^}]*\\})?"), VerdictExpected,
		func(m []string) string {
			values := "its values"
			if m[1] != "" {
				values = m[1]
			}
			return "Requests that leave temperature, top_p or top_k unset get the model's generation_config.json defaults (" + values + ") instead of vLLM's; for comparable benchmarks send them explicitly, or start the server with --generation-config vllm."
		}},
	{"enforce-eager", "Enforce eager set", regexp.MustCompile(`Enforce eager set, disabling torch.compile and CUDAGraphs`), VerdictPerformance,
		say("--enforce-eager skips torch.compile and CUDA-graph capture: start-up is faster and a little memory is saved, but each decode step launches its kernels one by one, which costs throughput, most at small batch sizes.")},
	{"inductor-disabled", "Inductor compilation was disabled", regexp.MustCompile(`Inductor compilation was disabled by user settings`), VerdictExpected,
		say("A consequence of --enforce-eager (compilation mode none): the fusion passes that need Inductor are off.")},
	{"default-moe-config", "Using default MoE config", regexp.MustCompile(`Using default MoE config\. Performance might be sub-optimal!(?: Config file not found at \S*/([^/\s]+\.json))?`), VerdictPerformance,
		func(m []string) string {
			shape := "this expert shape on this GPU"
			if m[1] != "" {
				shape = strings.TrimSuffix(m[1], ".json")
			}
			return "vLLM has no tuned fused-MoE kernel configuration for " + shape + ", so it uses generic tile sizes and the MoE layers may run slower than they could; vLLM's benchmarks/kernels/benchmark_moe.py --tune can write one for this GPU."
		}},
	{"c10d-hostname", "hostname of the client socket", regexp.MustCompile(`The hostname of the client socket cannot be retrieved`), VerdictHarmless,
		say("PyTorch's distributed store could not look up this host's name; on a single node it is cosmetic.")},
	{"spawn", "multiprocessing start method", regexp.MustCompile("We must use the `?spawn`? multiprocessing start method"), VerdictHarmless,
		say("CUDA was already initialised in the parent process, so vLLM starts its workers with spawn instead of fork; start-up takes a moment longer, nothing else changes.")},
	{"max-autotune-sms", "max_autotune_gemm", regexp.MustCompile(`Not enough SMs to use max_autotune_gemm mode`), VerdictHarmless,
		say("torch.compile's GEMM autotuning needs a GPU with many streaming multiprocessors; on this one it keeps the default kernels.")},
	{"preempted", "is preempted by", regexp.MustCompile(`is preempted by PreemptionMode\.(\w+) mode because there is not enough KV cache space`), VerdictPerformance,
		say("The KV cache filled up and vLLM evicted a running request to make room (it is recomputed or swapped back later), which costs latency; raise --gpu-memory-utilization, or lower --max-num-seqs or --max-num-batched-tokens.")},
	{"out-of-memory", "emory", regexp.MustCompile(`CUDA out of memory|OutOfMemoryError`), VerdictError,
		say("The GPU ran out of memory: if another process shares the GPU lower --gpu-memory-utilization, otherwise lower --max-model-len, --max-num-seqs or --max-num-batched-tokens, or split the model over more GPUs.")},
	{"kv-too-small", "", regexp.MustCompile(`larger than the available KV cache memory|No available memory for the cache blocks|Insufficient memory for KV cache|larger than the maximum number of tokens that can be stored in KV cache|To serve at least one request with the model'?s max seq len`), VerdictError,
		say("The KV cache cannot hold one request of max_model_len: lower --max-model-len, raise --gpu-memory-utilization, or add GPUs.")},
	{"max-model-len-too-long", "derived max_model_len", regexp.MustCompile(`max_model_len \(?(\d+)\)? is greater than the derived max_model_len`), VerdictError,
		say("--max-model-len asks for more context than the model's config.json allows (max_position_embeddings); lower it, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 only if the model is known to handle the longer context.")},
	{"engine-dead", "ngine", regexp.MustCompile(`EngineDeadError|Engine core proc .* died unexpectedly|EngineCore encountered a fatal error|EngineCore hit an exception|Engine loop is not running`), VerdictError,
		say("The engine process stopped, so the API server can no longer serve; the cause is in the lines just before it (often out of memory or a failed kernel).")},
	{"engine-start-failed", "ngine", regexp.MustCompile(`EngineCore failed to start|Engine core initialization failed`), VerdictError,
		say("The engine failed while starting, before the server could serve; the reason is the exception at the end of the traceback that follows (or precedes) this line, often too little memory for the KV cache.")},
	{"config-not-set", "Current vLLM config is not set", regexp.MustCompile(`Current vLLM config is not set`), VerdictHarmless,
		say("Some code asked for the configuration before the engine's was in place and got a default one; a 'max_num_batched_tokens=2048' line printed then is that default's, not the engine's.")},
	{"slow-image-processor", "slow image processor", regexp.MustCompile(`Using a slow image processor`), VerdictHarmless,
		say("The model's image preprocessing uses the Python implementation; it matters only for image-heavy traffic.")},
}

// errorLineRe recognises pasted error lines that carry no log level: a
// traceback, an exception, a pydantic validation error.
var errorLineRe = regexp.MustCompile(`^(?:Traceback \(most recent call last\)|(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)(?::|$)|Value error, )`)

// normalize turns a message into the key of its kind: numbers become #
// and quoted strings '…', since they vary between occurrences of one
// warning.
func normalize(msg string) string {
	var b strings.Builder
	b.Grow(len(msg))
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		switch {
		case c >= '0' && c <= '9':
			for i+1 < len(msg) && (msg[i+1] >= '0' && msg[i+1] <= '9' || msg[i+1] == '.') {
				i++
			}
			b.WriteByte('#')
		case c == '\'' || c == '"':
			if j := strings.IndexByte(msg[i+1:], c); j >= 0 {
				b.WriteString("'…'")
				i += j + 1
				continue
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// finding groups a warning or error line with earlier ones of its kind.
// It reports whether the line was one. A line without a level is one
// when it is an exception or an error message servebench knows.
func (p *Parser) finding(r *run, rec *record) bool {
	level := rec.level
	switch {
	case level == "WARNING" || level == "ERROR" || level == "CRITICAL":
	case level == "" && (errorLineRe.MatchString(rec.msg) || knownError(rec.msg)):
		level = "ERROR"
	default:
		return false
	}
	return p.findingAt(r, rec, level) != ""
}

// knownError reports whether msg is an error of the catalogue.
func knownError(msg string) bool {
	for _, k := range catalogue {
		if k.verdict == VerdictError && strings.Contains(msg, k.key) && k.re.MatchString(msg) {
			return true
		}
	}
	return false
}

// findingAt records the record as a finding of the given level and
// returns its key.
func (p *Parser) findingAt(r *run, rec *record, level string) string {
	msg := rec.msg
	var key, verdict, explanation string
	for _, k := range catalogue {
		if !strings.Contains(msg, k.key) {
			continue
		}
		if m := k.re.FindStringSubmatch(msg); m != nil {
			key, verdict, explanation = level+" "+k.id, k.verdict, k.explain(m)
			break
		}
	}
	if key == "" {
		norm := msg
		if len(norm) > 2*maxValue {
			norm = norm[:2*maxValue]
		}
		key = level + " " + normalize(norm)
	}
	if (level == "ERROR" || level == "CRITICAL") && (verdict == "" || verdict == VerdictError) {
		p.noteError(r, rec)
	}
	r.lastFinding[rec.proc] = key
	if f := r.findings[key]; f != nil {
		f.Count++
		return key
	}
	if len(r.findings) >= maxFindings {
		r.findingsDropped++
		return ""
	}
	if len(msg) > maxValue {
		msg = msg[:maxValue] + "…"
	}
	r.findings[key] = &Finding{Level: level, Count: 1, FirstLine: p.line, Source: rec.source, Message: msg,
		Verdict: verdict, Explanation: explanation}
	r.findingOrder = append(r.findingOrder, key)
	return key
}

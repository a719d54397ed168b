package vllmlog

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/decodelaw"
	"github.com/servebench/servebench/internal/kvcapacity"
)

// analyze derives a run's explanations, check, phases, decay, findings
// and hints from its figures. It is idempotent: every derived field is
// rebuilt from the parser's state.
func (p *Parser) analyze(r *run) {
	c := &r.Config
	// The budget: a value given on the command line wins; otherwise the
	// last printed one is the engine's.
	if !fromArgs(c.BatchedTokensSource) {
		c.MaxNumBatchedTokens, c.BatchedTokensSource = 0, ""
		if n := len(c.BatchedTokensPrinted); n > 0 {
			c.MaxNumBatchedTokens, c.BatchedTokensSource = c.BatchedTokensPrinted[n-1], "log"
		}
	}
	if !fromArgs(c.MaxNumSeqsSource) {
		c.MaxNumSeqs, c.MaxNumSeqsSource = 0, ""
	}
	r.mergeCommand()
	if c.MaxModelLen == 0 && r.KV.ConcurrencyLen > 0 {
		c.MaxModelLen = r.KV.ConcurrencyLen // the concurrency line's "for N tokens per request" is max_model_len
	}
	c.Generation, c.GenerationFrom = r.generation()
	r.KV.Check = nil
	ck, lay := p.kvCheck(r)
	r.KV.Check = ck
	if c.MaxNumSeqs == 0 && !fromArgs(c.BatchedTokensSource) && c.BatchedTokensSource != srcCommand {
		switch c.MaxNumBatchedTokens {
		case 8192:
			c.MaxNumSeqs, c.MaxNumSeqsSource = 1024, "not printed; vLLM's default alongside the 8192 budget"
		case 2048:
			c.MaxNumSeqs, c.MaxNumSeqsSource = 256, "not printed; vLLM's default alongside the 2048 budget"
		}
	}
	c.Notes = configNotes(r, ck)
	r.Startup.Phases, r.Startup.WallS = phases(r)
	r.KV.Notes = kvNotes(r)
	r.Runtime.Requests = r.Runtime.Requests[:0]
	for k, n := range r.requests {
		k.Count = n
		r.Runtime.Requests = append(r.Runtime.Requests, k)
	}
	slices.SortFunc(r.Runtime.Requests, func(a, b RouteCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Method, b.Method), cmp.Compare(a.Status, b.Status))
	})
	r.Runtime.Decay = decay(r, lay, ck)
	r.Findings = findings(r)
	r.Diagnoses = diagnose(r)
	r.Hints = hints(r, lay, ck)
}

// configNotes explains the settings people ask about.
func configNotes(r *run, ck *Check) []string {
	c := &r.Config
	var out []string
	if c.MaxNumBatchedTokens > 0 {
		out = append(out, fmt.Sprintf("max_num_batched_tokens = %s is the step budget: the most tokens one scheduler step processes, decode tokens and prompt chunks together. Running requests are served first; a long prompt is prefilled in chunks over several steps (chunked prefill).",
			kvcapacity.Thousands(c.MaxNumBatchedTokens)))
	}
	if distinct := dedupeInts(c.BatchedTokensPrinted); len(distinct) > 1 {
		s := fmt.Sprintf("The budget is printed %d times with different values (%s): every line comes from building a scheduler configuration, and the earlier one is built with the class default (2048) before the server's real settings are resolved (vLLM 0.11 did this while preparing its command-line defaults). The engine runs with the last, %s",
			len(c.BatchedTokensPrinted), joinInts(c.BatchedTokensPrinted), kvcapacity.Thousands(c.MaxNumBatchedTokens))
		if c.MaxNumBatchedTokens == 8192 {
			s += ", vLLM's API-server default on a GPU of 70 GiB or more (other than A100)"
		}
		if ck.Agrees() && ck.Budget == c.MaxNumBatchedTokens {
			s += "; the KV check below reproduces the printed concurrency only with this value"
		}
		out = append(out, s+".")
	}
	if c.Architecture != "" {
		out = append(out, fmt.Sprintf("The architecture %s is the 'architectures' entry of the model's config.json; vLLM looks the name up in its model registry (vllm/model_executor/models) and runs its own implementation of it. --model-impl transformers would use the Hugging Face code instead, --hf-overrides can change the entry.", c.Architecture))
	}
	if c.CheckpointDtype != "" && c.Dtype != "" && c.CheckpointDtype != c.Dtype {
		s := fmt.Sprintf("The checkpoint's config declares %s; vLLM computes in %s (--dtype auto), which halves the memory of activations and of the KV cache.", c.CheckpointDtype, c.Dtype)
		if q := c.Quantization; q != "" && q != "None" {
			s += fmt.Sprintf(" The %s-quantized weights keep their own format.", q)
		}
		out = append(out, s)
	}
	if c.CUDAGraphMode == "FULL_AND_PIECEWISE" {
		out = append(out, "CUDA graphs record a step's kernel launches once and replay them, saving the CPU's launch overhead at every step: FULL_AND_PIECEWISE replays the whole forward pass for decode-only batches and, for batches that mix prefill and decode, replays the parts between attention calls, which run eagerly.")
	}
	if n := c.CaptureSizeOverride; n > 0 {
		s := fmt.Sprintf("Graphs are captured for batch sizes up to %s", kvcapacity.Thousands(n))
		if len(c.CaptureSizes) > 0 {
			s += fmt.Sprintf(" (%d sizes)", len(c.CaptureSizes))
		}
		out = append(out, s+": batches up to that size replay a graph, larger ones run without; each captured size costs start-up time and some GPU memory (the capture time and GiB are under Start-up).")
	}
	if c.AsyncScheduling != nil && *c.AsyncScheduling {
		out = append(out, "Asynchronous scheduling prepares the next step while the GPU runs the current one, hiding the scheduler's CPU time between decode steps.")
	}
	if c.EnforceEager != nil && *c.EnforceEager {
		out = append(out, "--enforce-eager: no torch.compile and no CUDA graphs; every kernel is launched from Python at every step.")
	}
	if c.TensorParallel > 0 {
		ep := "off"
		if c.ExpertParallel != nil && *c.ExpertParallel {
			ep = "on"
		}
		out = append(out, fmt.Sprintf("Parallelism: tensor %d, pipeline %d, data %d, expert %s. World size %d means %s.",
			c.TensorParallel, max(1, c.PipelineParallel), max(1, c.DataParallel), ep, c.TensorParallel*max(1, c.PipelineParallel),
			map[bool]string{true: "one GPU holds the whole model; the rank lines and the Gloo messages about 0 peers are that single process describing itself", false: "the model is split across GPUs; each rank line names one GPU's place"}[c.TensorParallel*max(1, c.PipelineParallel) == 1]))
	}
	return out
}

// kvNotes explains the memory lines around the KV figures.
func kvNotes(r *run) []string {
	out := append([]string(nil), r.memoryNotes...)
	if n := r.KV.ProfilingBlocks; n > 0 {
		out = append(out, fmt.Sprintf("The num_gpu_blocks_override=%s line belongs to the measurement of CUDA-graph memory, which runs with a small temporary cache of %s blocks; the real cache is the one sized below it.", kvcapacity.Thousands(n), kvcapacity.Thousands(n)))
	}
	if len(r.conflicts) > 0 {
		out = append(out, "Some figures were printed again with other values, which were not taken (another worker, or an excerpt of another server pasted into the log): "+strings.Join(r.conflicts, "; ")+".")
	}
	return out
}

// phases divides the start-up wall time into parts that do not overlap.
func phases(r *run) ([]Phase, float64) {
	s := &r.Startup
	var out []Phase
	add := func(name string, sec float64, from string) {
		if sec >= 0.05 {
			out = append(out, Phase{Name: name, Seconds: round2(sec), From: from})
		}
	}
	if !r.began.IsZero() && !r.loadStart.IsZero() {
		add("API server and engine start", r.loadStart.Sub(r.began).Seconds(), "first timestamp → \"Starting to load model\"")
	}
	add("weight download", s.DownloadS, "\"Time spent downloading weights\"")
	add("weight loading", s.WeightsS, "\"Loading weights took\"")
	if s.ModelLoadS > 0 {
		add("rest of model loading", s.ModelLoadS-s.DownloadS-s.WeightsS, "\"Model loading took\" − download − weights")
	}
	add("torch.compile", s.CompileS, "\"torch.compile took … in total\"")
	add("profiling run", s.ProfilingS, "\"Initial profiling/warmup run took\" or \"Memory profiling takes\"")
	add("CUDA-graph capture", s.CaptureS, "\"Graph capturing finished in\"")
	if s.EngineInitS > 0 {
		add("KV cache and other engine set-up", s.EngineInitS-s.CompileS-s.ProfilingS-s.CaptureS, "\"init engine … took\" − compile − profiling − capture")
	}
	if !r.initAt.IsZero() && !r.ready.IsZero() {
		add("API server warm-up until ready", r.ready.Sub(r.initAt).Seconds(), "\"init engine\" → \"Starting vLLM server\"")
	}
	wall := 0.0
	if !r.began.IsZero() && !r.ready.IsZero() {
		wall = round2(r.ready.Sub(r.began).Seconds())
		sum := 0.0
		for _, ph := range out {
			sum += ph.Seconds
		}
		if wall-sum >= 1 {
			add("between the figures above", wall-sum, "wall time − the phases above")
		}
	}
	return out, wall
}

// minFitPoints is the fewest stats lines the decode law is fitted to.
const minFitPoints = 4

// heldChange is the smallest change of decode throughput called a change.
const heldChange = 0.05

// fullDecode reports whether the interval that ends at pts[i] was spent
// decoding one unchanged batch: requests running, none waiting, none
// preempted, no prompt token prefilled (so no request started), and as
// many running at its start as at its end. An interval holding a
// request's arrival or departure is partial and tells nothing of the
// decode step's cost.
func fullDecode(pts []Point, i int) bool {
	p := pts[i]
	if !(p.GenerationTPS > 0) || !(p.Running > 0) || p.PromptTPS != 0 || p.Waiting > 0 || p.Preemptions > 0 || p.Swapped > 0 {
		return false
	}
	return i == 0 || pts[i-1].Running == p.Running
}

// decayStretch finds the longest run of full decode-only intervals with
// the same running count.
func decayStretch(pts []Point) (from, to int) {
	bestFrom, bestTo := 0, -1
	for i := 0; i < len(pts); {
		if !fullDecode(pts, i) {
			i++
			continue
		}
		j := i
		for j+1 < len(pts) && fullDecode(pts, j+1) && pts[j+1].Running == pts[i].Running {
			j++
		}
		if j-i > bestTo-bestFrom {
			bestFrom, bestTo = i, j
		}
		i = j + 1
	}
	return bestFrom, bestTo
}

// decay measures and explains the throughput change of the longest
// stretch of steady decoding.
func decay(r *run, lay *layout, ck *Check) *Decay {
	for _, s := range r.Runtime.Engines {
		from, to := decayStretch(s.Points)
		if to-from < 1 {
			continue
		}
		pts := s.Points[from : to+1]
		first, last := pts[0], pts[len(pts)-1]
		d := &Decay{Engine: s.Engine, From: first.Time, To: last.Time, Points: len(pts), Streams: first.Running,
			StartTPS: first.GenerationTPS, EndTPS: last.GenerationTPS, StartKVPerc: first.KVUsagePerc, EndKVPerc: last.KVUsagePerc,
			Change: last.GenerationTPS/first.GenerationTPS - 1, points: pts}
		if !math.IsNaN(first.OffsetS) && !math.IsNaN(last.OffsetS) {
			d.Seconds = round2(last.OffsetS - first.OffsetS)
		}
		// Context in flight from KV usage.
		var context func(Point) float64
		var geom *kvcapacity.Geometry
		if lay != nil {
			geom = &lay.geom
		}
		switch {
		case geom != nil && ck != nil && ck.Blocks > 1 && geom.Hybrid():
			usable := float64(ck.Blocks - 1)
			context = func(p Point) float64 { return geom.ContextFromBlocks(p.KVUsagePerc/100*usable, p.Running) }
			d.ContextBasis = fmt.Sprintf("KV usage × %s usable blocks, shared equally by the running requests; each holds its context in the full-attention layers and at most one window in the sliding-window layers", kvcapacity.Thousands(ck.Blocks-1))
		case geom != nil && ck != nil && ck.Blocks > 1:
			usable := float64(ck.Blocks - 1)
			context = func(p Point) float64 { return geom.ContextFromBlocks(p.KVUsagePerc/100*usable, p.Running) }
			d.ContextBasis = fmt.Sprintf("KV usage × %s usable blocks × %d tokens per block", kvcapacity.Thousands(ck.Blocks-1), geom.MinBlockSize)
		case r.KV.Tokens > 0:
			tokens := float64(r.KV.Tokens)
			context = func(p Point) float64 { return p.KVUsagePerc / 100 * tokens }
			d.ContextBasis = fmt.Sprintf("KV usage × the printed %s tokens (exact only when every layer keeps the whole context)", kvcapacity.Thousands(r.KV.Tokens))
		}
		// A geometry that cannot explain the blocks by context (a model
		// of sliding-window layers only) gives NaN: then no estimate.
		if context != nil && slices.ContainsFunc(pts, func(p Point) bool { x := context(p); return math.IsNaN(x) || math.IsInf(x, 0) }) {
			context = nil
		}
		var ws []decodelaw.Point
		if context != nil && !math.IsNaN(first.Running) && !math.IsNaN(first.KVUsagePerc) {
			for _, p := range pts {
				x := context(p)
				d.ctx = append(d.ctx, x)
				ws = append(ws, decodelaw.Point{Streams: p.Running, TokensPerSec: p.GenerationTPS, Context: x})
			}
			d.StartContext, d.EndContext = math.Round(d.ctx[0]), math.Round(d.ctx[len(d.ctx)-1])
			// A law needs a few points and a change to explain.
			if len(ws) >= minFitPoints && d.Change <= -heldChange {
				d.Fit = decodelaw.FitPoints(ws)
			}
			if f := d.Fit; f != nil && f.Holds {
				b := f.SlopeNSPerToken * 1e-6 // ms per token of context
				d.KVShareEnd = round2(b * d.EndContext / (f.InterceptMS + b*d.EndContext))
			}
		} else {
			d.ContextBasis = ""
		}
		d.Explanation = explainDecay(d)
		return d
	}
	return nil
}

func explainDecay(d *Decay) []string {
	var out []string
	span := ""
	if d.Seconds > 0 {
		span = fmt.Sprintf(" (%s)", duration(d.Seconds))
	}
	held := math.Abs(d.Change) < heldChange
	switch {
	case held:
		out = append(out, fmt.Sprintf("Generation throughput held at %s tokens/s (%s to %s, %s) from %s to %s%s.", f1(d.StartTPS), f1(d.StartTPS), f1(d.EndTPS), signedPct(d.Change), d.From, d.To, span))
	case d.Change < 0:
		out = append(out, fmt.Sprintf("Generation throughput fell from %s to %s tokens/s (%s) between %s and %s%s.", f1(d.StartTPS), f1(d.EndTPS), signedPct(d.Change), d.From, d.To, span))
	default:
		out = append(out, fmt.Sprintf("Generation throughput rose from %s to %s tokens/s (%s) between %s and %s%s.", f1(d.StartTPS), f1(d.EndTPS), signedPct(d.Change), d.From, d.To, span))
	}
	out = append(out, fmt.Sprintf("In all %d stats lines %s running, none waiting, no prompt token prefilled and nothing preempted, as many running at each interval's start as at its end: the batch did not change, so the change is not one of load.", d.Points, plural(d.Streams, "request was", "requests were")))
	if !math.IsNaN(d.StartKVPerc) && !math.IsNaN(d.EndKVPerc) {
		s := fmt.Sprintf("KV-cache usage went from %s %% to %s %%", f1(d.StartKVPerc), f1(d.EndKVPerc))
		if d.ContextBasis != "" {
			s += fmt.Sprintf(": the context held by the running requests grew from about %s to %s tokens in all (%s)", about(d.StartContext), about(d.EndContext), d.ContextBasis)
		}
		out = append(out, s+".")
	}
	if held {
		out = append(out, "The context did not grow enough to slow the steps measurably: at this size each step's time is dominated by reading the model's weights, not the KV cache.")
		return out
	}
	if d.Change > 0 {
		out = append(out, "With the same batch and a growing context, decode steps do not get faster by themselves: the log does not tell what sped them up (a change of clocks, of load from another process on the GPU, or of the batch within the intervals).")
		return out
	}
	out = append(out, "Decoding is bound by memory bandwidth: every step reads the whole KV cache of every running request, and each request gets one token per step, so as contexts grow each step takes longer and tokens per second per request fall as 1 / (a + b × context in flight).")
	if f := d.Fit; f != nil {
		lines := fmt.Sprintf("the %d lines", f.Windows)
		if f.Outliers > 0 {
			lines = fmt.Sprintf("%d of the %d lines (%d left out as an outlier)", f.Windows, f.Windows+f.Outliers, f.Outliers)
		}
		s := fmt.Sprintf("Fitted over %s: a = %s ms per token per request at zero context, b = %s ns per token of context in flight (R² %s)", lines, trimNum(f.InterceptMS), trimNum(f.SlopeNSPerToken), r2(f.R2))
		if f.Holds && d.KVShareEnd > 0 {
			s += fmt.Sprintf("; by the last line, reading context took %s of each step", pct(d.KVShareEnd))
		}
		if !f.Holds {
			s += "; a negative term makes this arithmetic rather than the decode law, so no law is claimed"
		}
		out = append(out, s+".")
	}
	return out
}

// r2 formats a coefficient of determination, with a fourth digit when the
// third would round to 1.
func r2(x float64) string {
	if x >= 0.9995 && x < 1 {
		return strconv.FormatFloat(math.Floor(x*1e4)/1e4, 'f', 4, 64)
	}
	return strconv.FormatFloat(x, 'f', 3, 64)
}

// about rounds an estimate to three significant digits.
func about(x float64) string {
	if x < 1000 {
		return kvcapacity.Thousands(int(math.Round(x/10) * 10))
	}
	p := math.Pow(10, math.Floor(math.Log10(x))-2)
	return kvcapacity.Thousands(int(math.Round(x/p) * p))
}

func plural(n float64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return trimNum(n) + " " + many
}

// findings orders the grouped warnings and errors: errors first, then
// performance, then the rest, each in order of appearance.
func findings(r *run) []Finding {
	var out []Finding
	for _, k := range r.findingOrder {
		out = append(out, *r.findings[k])
	}
	rank := func(f Finding) int {
		switch {
		case f.Verdict == VerdictError || (f.Verdict == "" && f.Level != "WARNING"):
			return 0
		case f.Verdict == VerdictPerformance:
			return 1
		case f.Verdict == "":
			return 2
		}
		return 3
	}
	slices.SortStableFunc(out, func(a, b Finding) int { return cmp.Compare(rank(a), rank(b)) })
	if r.findingsDropped > 0 {
		out = append(out, Finding{Level: "WARNING", Count: r.findingsDropped,
			Message: fmt.Sprintf("%d more warnings and errors of kinds beyond the first %d (not kept)", r.findingsDropped, maxFindings)})
	}
	return out
}

// hints derives tuning suggestions from the figures.
func hints(r *run, lay *layout, ck *Check) []string {
	var geom *kvcapacity.Geometry
	if lay != nil {
		geom = &lay.geom
	}
	c, kv := &r.Config, &r.KV
	th := kvcapacity.Thousands
	var out []string
	seqHint := false
	if _, failed := r.errs[errKVTooSmall]; kv.Concurrency >= 1 && kv.ConcurrencyLen > 0 && !failed {
		full := fmt.Sprintf("The KV cache holds %.2f requests of the full %s tokens at once", kv.Concurrency, th(kv.ConcurrencyLen))
		switch seqs := c.MaxNumSeqs; {
		case seqs > 0 && float64(seqs) > kv.Concurrency && geom != nil && ck != nil && ck.Blocks > 1:
			limit := geom.MaxContext(ck.Blocks, seqs)
			s := fmt.Sprintf("%s, while up to %s may run (max_num_seqs %s): that many fit together only while each stays under about %s tokens of context.",
				full, th(seqs), th(seqs), about(limit))
			if limit < 2000 {
				s += fmt.Sprintf(" In practice the KV cache, not max_num_seqs, decides how many run: about %s requests of 2,000 tokens fit, %s of 8,000.",
					th(geom.Streams(ck.Blocks, 2000)), th(geom.Streams(ck.Blocks, 8000)))
			}
			out = append(out, s+" Beyond that vLLM preempts the most recently admitted request (it is recomputed later) and new requests wait, which shows as TTFT and ITL spikes; with long requests, lower max_num_seqs or max_model_len, or give the cache more memory (--gpu-memory-utilization, more GPUs).")
			seqHint = true
		case seqs > 0 && float64(seqs) <= kv.Concurrency:
			out = append(out, fmt.Sprintf("%s, more than max_num_seqs (%s): the running cap, not the KV cache, limits admission.", full, th(seqs)))
		default:
			out = append(out, fmt.Sprintf("%s: beyond that many concurrent requests of full length, vLLM preempts requests (to recompute, or with V0 to swap, later) and new ones wait; shorter requests fit more.", full))
		}
	}
	for _, s := range r.Runtime.Engines {
		if kv.Concurrency > 0 && s.MaxRunning > kv.Concurrency && !seqHint {
			out = append(out, fmt.Sprintf("Up to %s requests ran at once on engine %s, more than the %.2f of full length the cache holds: that works while their contexts stay short (peak KV usage %s %%).", trimNum(s.MaxRunning), s.Engine, kv.Concurrency, f1(s.MaxKVPerc)))
		}
	}
	if b := c.MaxNumBatchedTokens; b > 0 {
		s := fmt.Sprintf("max_num_batched_tokens %s trades TTFT against ITL: a larger budget prefills a long prompt in fewer, longer steps (lower TTFT), and every running request waits through those steps (higher ITL, worse tail); a smaller one interleaves prefill with decoding more finely (lower ITL p99, higher TTFT). bench sweep can measure the trade-off on this server.", th(b))
		if geom != nil && geom.Hybrid() && ck != nil && ck.Blocks > 1 {
			other := 2048
			if b <= 2048 {
				other = 8192
			}
			settings := geom.Settings
			settings.MaxNumBatchedTokens = other
			if alt, err := kvcapacity.New(lay.model, settings); err == nil {
				s += fmt.Sprintf(" It also sizes each request's sliding-window reservation: at %s the same pool would hold %.2f requests of full length instead of %.2f.", th(other), alt.Concurrency(ck.Blocks), geom.Concurrency(ck.Blocks))
			}
		}
		out = append(out, s)
	}
	st := &r.Startup
	if st.ModelGiB > 0 && st.WeightsS >= 60 {
		if rate := st.ModelGiB / st.WeightsS; rate < 1 {
			out = append(out, fmt.Sprintf("Weights loaded at %s GiB/s (%s GiB in %s s): storage is the bottleneck (a network or overlay file system, or a cold disk). A local NVMe copy, or files already in the page cache from an earlier start, load several GiB per second.", trimNum(round2(rate)), trimNum(st.ModelGiB), trimNum(st.WeightsS)))
		}
	}
	if st.DownloadS >= 30 {
		out = append(out, fmt.Sprintf("Downloading the weights took %s s: the first start on this machine. Later starts read the Hugging Face cache; mount it from persistent storage in containers.", trimNum(st.DownloadS)))
	}
	if h := st.CompileCacheHit; h != nil && !*h && st.CompileS >= 10 {
		out = append(out, fmt.Sprintf("torch.compile compiled from scratch (%s s) and cached the result (~/.cache/vllm/torch_compile_cache); a restart with the same model and settings loads it in seconds, if that directory survives the restart.", trimNum(st.CompileS)))
	}
	if c.EnforceEager != nil && *c.EnforceEager {
		out = append(out, "For serving, drop --enforce-eager: CUDA graphs and torch.compile usually raise decode throughput noticeably; it mostly saves start-up time and a little memory.")
	}
	if d := r.Runtime.Decay; d != nil && d.Change <= -0.15 && d.EndContext > 0 {
		out = append(out, fmt.Sprintf("Size capacity for the context requests reach, not for their start: with about %s tokens in flight the same %s got %s fewer tokens per second than at %s.", about(d.EndContext), plural(d.Streams, "request", "requests"), pct(-d.Change), about(d.StartContext)))
	}
	for _, s := range r.Runtime.Engines {
		if h := s.Last.PrefixHitPerc; h >= 50 {
			out = append(out, fmt.Sprintf("Prefix cache hit rate %s %% on engine %s: most prompt tokens came from the cache, so prefills were cheap. To measure uncached prompts, make prompts differ (servebench: prompts.salt: random).", f1(h), s.Engine))
			break
		}
	}
	return out
}

func dedupeInts(xs []int) []int {
	var out []int
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, kvcapacity.Thousands(x))
	}
	return strings.Join(s, ", then ")
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// trimNum formats x with at most three decimals, trailing zeros dropped.
func trimNum(x float64) string {
	if math.Abs(x) >= 1000 {
		return kvcapacity.Thousands(int(math.Round(x)))
	}
	digits := 3
	switch {
	case math.Abs(x) >= 100:
		digits = 1
	case math.Abs(x) >= 10:
		digits = 2
	}
	s := strconv.FormatFloat(x, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func pct(f float64) string { return fmt.Sprintf("%.0f %%", 100*f) }

func signedPct(f float64) string {
	switch {
	case f < 0:
		return fmt.Sprintf("−%.0f %%", -100*f)
	case f > 0:
		return fmt.Sprintf("+%.0f %%", 100*f)
	}
	return "0 %"
}

// duration formats seconds as "5 min 40 s".
func duration(s float64) string {
	switch {
	case s >= 3600:
		return fmt.Sprintf("%d h %d min", int(s)/3600, int(s)%3600/60)
	case s >= 60:
		return fmt.Sprintf("%d min %d s", int(s)/60, int(s)%60)
	}
	return trimNum(s) + " s"
}

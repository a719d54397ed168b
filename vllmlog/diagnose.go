package vllmlog

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/internal/kvcapacity"
)

// kvFullPerc is the KV-cache usage from which the cache counts as full:
// V1 admits a request only when its blocks are free, and in practice
// admission stalls in the nineties.
const kvFullPerc = 90

// diagnose derives what the run's figures imply, each with its evidence.
func diagnose(r *run) []Diagnosis {
	var out []Diagnosis
	for _, s := range r.Runtime.Engines {
		out = append(out, diagnoseSeries(r, s)...)
	}
	if d := r.Runtime.Decay; d != nil {
		out = append(out, decayDiagnosis(d))
	}
	return append(out, errorDiagnoses(r)...)
}

// pointEvidence states a stats line's figures.
func pointEvidence(p Point) Evidence {
	var parts []string
	add := func(name string, v float64, unit string) {
		if math.IsNaN(v) {
			return
		}
		s := strconv.FormatFloat(v, 'f', -1, 64) // as printed: counts whole, rates and usage with one decimal
		if unit != "" {
			s = f1(v)
		}
		parts = append(parts, fmt.Sprintf("%s %s%s", name, s, unit))
	}
	add("prompt", p.PromptTPS, " tok/s")
	add("generation", p.GenerationTPS, " tok/s")
	add("running", p.Running, "")
	add("waiting", p.Waiting, "")
	add("preemptions", p.Preemptions, "")
	add("swapped", p.Swapped, "")
	add("KV", p.KVUsagePerc, " %")
	return Evidence{Line: p.Line, Time: p.Time, What: strings.Join(parts, ", ")}
}

// evidenceOf cites at most four of the points: the first, the last and
// evenly between.
func evidenceOf(pts []Point, idx []int) []Evidence {
	var out []Evidence
	for _, j := range sampleIndexes(len(idx), 4) {
		out = append(out, pointEvidence(pts[idx[j]]))
	}
	return out
}

func diagnoseSeries(r *run, s *Series) []Diagnosis {
	pts := s.Points
	var out []Diagnosis
	stalled := stalledPoints(pts)
	if len(stalled) > 0 {
		first, last := pts[stalled[0]], pts[stalled[len(stalled)-1]]
		out = append(out, Diagnosis{ID: "stalled", Evidence: evidenceOf(pts, stalled), Text: fmt.Sprintf(
			"Nothing progressed on engine %s in %d stats lines in a row (%s to %s): %s running and %s waiting, yet 0 tokens/s generated and 0 prompt tokens/s. The engine was stuck (a hung collective, a wedged request, a dead worker), not slow; the lines just before the stall and the server's process state show why.",
			s.Engine, len(stalled), first.Time, last.Time, trimNum(nanMax(0, maxOf(pts, stalled, func(p Point) float64 { return p.Running }))),
			trimNum(nanMax(0, maxOf(pts, stalled, func(p Point) float64 { return p.Waiting }))))})
	}
	var waiting, preempted []int
	for i, p := range pts {
		if p.Waiting > 0 && !slices.Contains(stalled, i) {
			waiting = append(waiting, i)
		}
		if p.Preemptions > 0 || p.Swapped > 0 {
			preempted = append(preempted, i)
		}
	}
	if len(waiting) > 0 {
		out = append(out, waitingDiagnosis(r, s, waiting))
	}
	if len(preempted) > 0 {
		out = append(out, Diagnosis{ID: "preemption", Evidence: evidenceOf(pts, preempted), Text: fmt.Sprintf(
			"Requests were preempted on engine %s (%d stats lines show preemptions or swapped requests): the KV cache ran out while they ran, and vLLM evicted the most recently admitted to recompute (or swap) later, which shows as latency spikes; give the cache more memory (--gpu-memory-utilization, more GPUs) or admit fewer at once (--max-num-seqs).",
			s.Engine, len(preempted))})
	}
	return out
}

// stalledPoints are the points of every stretch of two or more stats
// lines in a row with work to do and nothing done.
func stalledPoints(pts []Point) []int {
	stuck := func(p Point) bool {
		return (p.Running > 0 || p.Waiting > 0) && p.GenerationTPS == 0 && p.PromptTPS == 0
	}
	var out []int
	for i := 0; i < len(pts); {
		j := i
		for j < len(pts) && stuck(pts[j]) {
			j++
		}
		if j-i >= 2 {
			for k := i; k < j; k++ {
				out = append(out, k)
			}
		}
		i = max(j, i+1)
	}
	return out
}

func maxOf(pts []Point, idx []int, f func(Point) float64) float64 {
	m := math.NaN()
	for _, i := range idx {
		if v := f(pts[i]); !math.IsNaN(v) && (math.IsNaN(m) || v > m) {
			m = v
		}
	}
	return m
}

func minOf(pts []Point, idx []int, f func(Point) float64) float64 {
	m := math.NaN()
	for _, i := range idx {
		if v := f(pts[i]); !math.IsNaN(v) && (math.IsNaN(m) || v < m) {
			m = v
		}
	}
	return m
}

// where keeps the indexes whose point satisfies f.
func where(pts []Point, idx []int, f func(Point) bool) []int {
	var out []int
	for _, i := range idx {
		if f(pts[i]) {
			out = append(out, i)
		}
	}
	return out
}

// knownMaxNumSeqs is max_num_seqs when the log (or its command) states
// it, not vLLM's default guessed from the budget.
func knownMaxNumSeqs(c *Config) int {
	if fromArgs(c.MaxNumSeqsSource) || c.MaxNumSeqsSource == srcCommand {
		return c.MaxNumSeqs
	}
	return 0
}

// waitingDiagnosis names what held requests waiting, as far as the
// numbers show it, or says that the log does not tell.
func waitingDiagnosis(r *run, s *Series, idx []int) Diagnosis {
	pts := s.Points
	kv := func(p Point) float64 { return p.KVUsagePerc }
	running := func(p Point) float64 { return p.Running }
	prompt := func(p Point) float64 { return p.PromptTPS }
	maxWait := trimNum(maxOf(pts, idx, func(p Point) float64 { return p.Waiting }))
	if r.Config.Generation == "V0" {
		if pf := where(pts, idx, func(p Point) bool { return p.GenerationTPS == 0 && p.PromptTPS > 0 }); len(pf) > 0 {
			return Diagnosis{ID: "v0-prefill-first", Evidence: evidenceOf(pts, pf), Text: fmt.Sprintf(
				"Requests waited on engine %s (up to %s) while the V0 engine ran prefill-only steps: in %d stats lines 0 tokens/s were generated while %s–%s prompt tokens/s were prefilled (KV at most %s %%). V0 schedules waiting prompts before running decodes unless chunked prefill is on, so every admission pauses generation for all running requests (--enable-chunked-prefill mixes them).",
				s.Engine, maxWait, len(pf), f1(minOf(pts, pf, prompt)), f1(maxOf(pts, pf, prompt)), f1(maxOf(pts, pf, kv)))}
		}
	}
	if full := where(pts, idx, func(p Point) bool { return p.KVUsagePerc >= kvFullPerc || p.Preemptions > 0 || p.Swapped > 0 }); 2*len(full) >= len(idx) {
		return Diagnosis{ID: "waiting-kv-full", Evidence: evidenceOf(pts, full), Text: fmt.Sprintf(
			"Requests waited on engine %s (up to %s) while the KV cache was full: usage %s–%s %% in %d of the %d stats lines with requests waiting. A request is admitted only when blocks for it are free, so admission waited for running requests to finish; TTFT includes that wait.",
			s.Engine, maxWait, f1(minOf(pts, full, kv)), f1(maxOf(pts, full, kv)), len(full), len(idx))}
	}
	seqs := knownMaxNumSeqs(&r.Config)
	if capped := where(pts, idx, func(p Point) bool { return seqs > 0 && p.Running >= float64(seqs) }); seqs > 0 && 2*len(capped) >= len(idx) {
		return Diagnosis{ID: "waiting-max-num-seqs", Evidence: evidenceOf(pts, capped), Text: fmt.Sprintf(
			"Requests waited on engine %s (up to %s) while %s were running, max_num_seqs (%s), with KV usage at most %s %%: the running cap, not the KV cache, held them back.",
			s.Engine, maxWait, trimNum(maxOf(pts, capped, running)), kvcapacity.Thousands(seqs), f1(maxOf(pts, capped, kv)))}
	}
	kvMax := maxOf(pts, idx, kv)
	rose := maxOf(pts, idx, running) > pts[idx[0]].Running
	capFree := (seqs > 0 && maxOf(pts, idx, running) < float64(seqs)) || (seqs == 0 && rose)
	prefilling := len(where(pts, idx, func(p Point) bool { return p.PromptTPS > 0 && p.PromptTPS >= p.GenerationTPS })) == len(idx)
	if prefilling && kvMax < kvFullPerc && capFree {
		budget := "max_num_batched_tokens"
		if b := r.Config.MaxNumBatchedTokens; b > 0 {
			budget += " = " + kvcapacity.Thousands(b)
		}
		return Diagnosis{ID: "prefill-bound", Evidence: evidenceOf(pts, idx), Text: fmt.Sprintf(
			"Requests waited on engine %s (up to %s) while prompts were prefilled at %s–%s tokens/s in every such stats line, with KV usage at most %s %% and the running count climbing from %s to %s: neither the KV cache nor a running cap held them. Admission was paced by prefill: each step's token budget (%s) went to prompt chunks, and a request starts decoding only once its whole prompt is in. A larger budget admits faster, at the cost of the running requests' inter-token latency.",
			s.Engine, maxWait, f1(minOf(pts, idx, prompt)), f1(maxOf(pts, idx, prompt)), f1(kvMax),
			trimNum(pts[idx[0]].Running), trimNum(maxOf(pts, idx, running)), budget)}
	}
	cap := "max_num_seqs is not stated"
	if seqs > 0 {
		cap = fmt.Sprintf("running stayed below max_num_seqs (%s)", kvcapacity.Thousands(seqs))
	}
	pre := "no prompt was being prefilled"
	if n := len(where(pts, idx, func(p Point) bool { return p.PromptTPS > 0 })); n > 0 {
		pre = fmt.Sprintf("prompts were prefilled in only %d of the %d stats lines with requests waiting", n, len(idx))
	}
	return Diagnosis{ID: "waiting-cause-unknown", Evidence: evidenceOf(pts, idx), Text: fmt.Sprintf(
		"Requests waited on engine %s (up to %s, with %s running) and the log does not tell why: KV usage was at most %s %% (not full), %s, and %s. A waiting request larger than the free blocks, requests that arrived just before the stats line, or a limit the log does not print look the same.",
		s.Engine, maxWait, span(minOf(pts, idx, running), maxOf(pts, idx, running)), f1(kvMax), cap, pre)}
}

// span is "a–b", or "a" when they are equal.
func span(a, b float64) string {
	if a == b {
		return trimNum(a)
	}
	return trimNum(a) + "–" + trimNum(b)
}

// decayDiagnosis turns the decode stretch into a diagnosis.
func decayDiagnosis(d *Decay) Diagnosis {
	id := "decode-held"
	switch {
	case d.Change <= -heldChange:
		id = "decode-decay"
	case d.Change >= heldChange:
		id = "decode-rise"
	}
	var ev []Evidence
	if n := len(d.points); n > 0 {
		ev = append(ev, pointEvidence(d.points[0]))
		if n > 1 {
			ev = append(ev, pointEvidence(d.points[n-1]))
		}
	}
	text := "Decode throughput while nothing else ran (see the decay section)."
	if len(d.Explanation) > 0 {
		text = d.Explanation[0]
	}
	return Diagnosis{ID: id, Text: text, Evidence: ev}
}

// errorDiagnoses name why the engine failed, from its error lines and
// its memory figures.
func errorDiagnoses(r *run) []Diagnosis {
	var out []Diagnosis
	if ev, ok := r.errs[errKVTooSmall]; ok || r.KV.AvailableGiB < 0 {
		text := "The KV cache could not hold one request of max_model_len"
		switch {
		case r.KV.AvailableGiB < 0:
			text = fmt.Sprintf("The memory left for the KV cache was %s GiB: the model's weights, activations and CUDA graphs took more than gpu_memory_utilization allows, so no KV cache could be made", trimNum(r.KV.AvailableGiB))
		case r.KV.GPUBlocks == 0 && r.gpuBlocksSeen:
			text = "0 GPU blocks were left for the KV cache"
		}
		evs := []Evidence{ev}
		if r.negEv.Line != 0 && r.negEv.Line != ev.Line {
			evs = append(evs, r.negEv)
		}
		out = append(out, Diagnosis{ID: errKVTooSmall, Evidence: evs, Text: text +
			"; the engine cannot start. Raise --gpu-memory-utilization (if nothing else shares the GPU), lower --max-model-len or --max-num-seqs, use a quantized model or KV cache, or add GPUs."})
	}
	if ev, ok := r.errs[errOOM]; ok {
		out = append(out, Diagnosis{ID: errOOM, Evidence: []Evidence{ev}, Text: "The GPU ran out of memory (CUDA out of memory): lower --gpu-memory-utilization if another process shares the GPU, otherwise lower --max-model-len, --max-num-seqs or --max-num-batched-tokens, or split the model over more GPUs."})
	}
	if ev, ok := r.errs[errEngineFailed]; ok {
		what := strings.TrimRight(ev.What, ".")
		why := "the log does not say why: it states no exception or figure that explains it"
		switch _, oom := r.errs[errOOM]; {
		case r.FinalError != "" && strings.TrimRight(r.FinalError, ".") != what:
			why = "the last error the log states is: " + strings.TrimRight(cut(r.FinalError, 200), ".")
		case r.KV.AvailableGiB < 0 || r.gpuBlocksSeen && r.KV.GPUBlocks == 0:
			why = "the log's own figures give the reason: no memory was left for the KV cache"
		case oom:
			why = "the GPU ran out of memory"
		}
		ev.What = what
		out = append(out, Diagnosis{ID: errEngineFailed, Evidence: []Evidence{ev}, Text: "The engine stopped (\"" + cut(what, 120) + "\"); " + why + "."})
	}
	return out
}

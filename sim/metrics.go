package sim

import (
	"github.com/servebench/servebench/internal/vllmmetric"

	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Histogram bucket upper bounds, as vLLM (v0.9 onward) declares them.
var (
	bucketsTTFT = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
		7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	bucketsITL = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
		10.0, 20.0, 40.0, 80.0}
	bucketsRequest = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
		120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	bucketsIteration = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
)

// buckets125 is vLLM's 1-2-5 series up to max.
func buckets125(maxValue int) []float64 {
	var b []float64
	for m := 1.0; ; m *= 10 {
		for _, f := range []float64{1, 2, 5} {
			if v := m * f; v <= float64(maxValue) {
				b = append(b, v)
			} else {
				return b
			}
		}
	}
}

// Histogram is a fixed-bucket histogram (counts per upper bound, plus sum
// and count), the shape Prometheus exposes.
type Histogram struct {
	Bounds []float64 // upper bounds, ascending; +Inf is implicit
	Counts []uint64  // per bucket (not cumulative); len(Bounds)+1
	Sum    float64
	Count  uint64
}

func newHistogram(bounds []float64) Histogram {
	return Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
}

func (h *Histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.Bounds, v) // first bound >= v: Prometheus buckets are "le"
	h.Counts[i]++
	h.Sum += v
	h.Count++
}

func (h Histogram) clone() Histogram {
	h.Counts = slices.Clone(h.Counts)
	return h
}

// Stats is a snapshot of the engine's metrics: what /metrics exposes and
// the periodic log line summarises. Counters are totals since start; a
// snapshot is a copy the caller owns.
type Stats struct {
	Running          int              // requests in the running list (vllm:num_requests_running)
	Waiting          int              // queued and preempted requests (vllm:num_requests_waiting)
	KVUsage          float64          // fraction of usable blocks held by requests, 0–1
	Steps            int64            // engine steps completed
	Preemptions      int              // requests preempted (recompute)
	PromptTokens     int64            // whole prompts, booked at each request's first token
	GenerationTokens int64            // output tokens
	PrefixQueries    int64            // prompt tokens looked up in the prefix cache at first admission
	PrefixHits       int64            // of which found in the cache
	Success          map[string]int64 // finished requests by reason: stop, length, abort

	// Speculative decoding (num_speculative_tokens > 0): drafts proposed,
	// their tokens, the tokens accepted, and those by draft position.
	SpecDrafts, SpecDraftTokens, SpecAccepted int64
	SpecAcceptedPerPos                        []int64

	// EnergyJ is the energy all GPUs used by the end of the last booked
	// step or gap (Engine.Energy is exact at any time), and BusyTime the
	// time steps ran; 0 without the power model.
	EnergyJ  float64
	BusyTime time.Duration

	// Histograms, in seconds (tokens for IterationTokens and the
	// Request*Tokens ones), with vLLM's buckets.
	TTFT, ITL, E2E, QueueTime, IterationTokens   Histogram
	RequestPromptTokens, RequestGenerationTokens Histogram

	hitWindow []hitEntry // recent lookups for the log's hit rate
}

type hitEntry struct{ queries, hits int64 }

// hitWindowRequests is how many recent requests the log's prefix-cache hit
// rate covers (vLLM's CachingMetrics keeps ≈ 1000).
const hitWindowRequests = 1000

func (s *Stats) init(maxModelLen int) {
	s.Success = map[string]int64{FinishStop: 0, FinishLength: 0, FinishAbort: 0}
	s.TTFT = newHistogram(bucketsTTFT)
	s.ITL = newHistogram(bucketsITL)
	s.E2E = newHistogram(bucketsRequest)
	s.QueueTime = newHistogram(bucketsRequest)
	s.IterationTokens = newHistogram(bucketsIteration)
	s.RequestPromptTokens = newHistogram(buckets125(maxModelLen))
	s.RequestGenerationTokens = newHistogram(buckets125(maxModelLen))
}

func (s *Stats) clone() Stats {
	c := *s
	c.Success = make(map[string]int64, len(s.Success))
	for k, v := range s.Success {
		c.Success[k] = v
	}
	for _, h := range []*Histogram{&c.TTFT, &c.ITL, &c.E2E, &c.QueueTime, &c.IterationTokens,
		&c.RequestPromptTokens, &c.RequestGenerationTokens} {
		*h = h.clone()
	}
	c.hitWindow = slices.Clone(s.hitWindow)
	c.SpecAcceptedPerPos = slices.Clone(s.SpecAcceptedPerPos)
	return c
}

func (s *Stats) recordQueue(d time.Duration) { s.QueueTime.observe(max(0, d.Seconds())) }

func (s *Stats) prefixLookup(queries, hits int) {
	s.PrefixQueries += int64(queries)
	s.PrefixHits += int64(hits)
	s.hitWindow = append(s.hitWindow, hitEntry{int64(queries), int64(hits)})
	if len(s.hitWindow) > hitWindowRequests {
		s.hitWindow = s.hitWindow[len(s.hitWindow)-hitWindowRequests:]
	}
}

// PrefixHitRate is hits ÷ queries over the most recent ≈ 1000 requests, as
// the periodic log reports it (0 when nothing was looked up).
func (s *Stats) PrefixHitRate() float64 {
	var q, h int64
	for _, e := range s.hitWindow {
		q += e.queries
		h += e.hits
	}
	if q == 0 {
		return 0
	}
	return float64(h) / float64(q)
}

func (s *Stats) recordFirstToken(ttft time.Duration, promptTokens int) {
	s.TTFT.observe(max(0, ttft.Seconds()))
	s.PromptTokens += int64(promptTokens)
}

func (s *Stats) recordITL(d time.Duration) { s.ITL.observe(max(0, d.Seconds())) }

func (s *Stats) recordFinish(r *Request, reason string, at time.Time) {
	s.Success[reason]++
	s.E2E.observe(max(0, at.Sub(r.arrival).Seconds()))
	s.RequestPromptTokens.observe(float64(len(r.Prompt)))
	s.RequestGenerationTokens.observe(float64(len(r.outputs)))
}

// WriteMetrics writes s in the Prometheus text exposition format 0.0.4 with
// vLLM's names, types and labels (model_name, engine="0").
func WriteMetrics(w io.Writer, s Stats, cfg Config) error {
	bw := bufio.NewWriter(w)
	labels := fmt.Sprintf(`engine="0",model_name=%q`, cfg.ServedModelName)
	family := func(name, typ, help string) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	sample := func(name, extra string, v float64) {
		l := labels
		if extra != "" {
			l = extra + "," + labels
		}
		fmt.Fprintf(bw, "%s{%s} %s\n", name, l, formatFloat(v))
	}
	gauge := func(name, help string, v float64) {
		family(name, "gauge", help)
		sample(name, "", v)
	}
	counter := func(name, help string, v float64) {
		family(name, "counter", help)
		sample(name, "", v)
	}
	histogram := func(name, help string, h Histogram) {
		family(name, "histogram", help)
		var cum uint64
		for i, b := range h.Bounds {
			cum += h.Counts[i]
			sample(name+"_bucket", fmt.Sprintf(`le=%q`, formatFloat(b)), float64(cum))
		}
		sample(name+"_bucket", `le="+Inf"`, float64(h.Count))
		sample(name+"_count", "", float64(h.Count))
		sample(name+"_sum", "", h.Sum)
	}

	gauge(vllmmetric.NumRequestsRunning, "Number of requests in model execution batches.", float64(s.Running))
	gauge(vllmmetric.NumRequestsWaiting, "Number of requests waiting to be processed.", float64(s.Waiting))
	gauge(vllmmetric.KVCacheUsagePerc, "KV-cache usage. 1 means 100 percent usage.", s.KVUsage)
	counter(vllmmetric.PrefixCacheQueries, "Prefix cache queries, in terms of number of queried tokens.", float64(s.PrefixQueries))
	counter(vllmmetric.PrefixCacheHits, "Prefix cache hits, in terms of number of cached tokens.", float64(s.PrefixHits))
	counter(vllmmetric.NumPreemptionsTotal, "Cumulative number of preemption from the engine.", float64(s.Preemptions))
	counter(vllmmetric.PromptTokensTotal, "Number of prefill tokens processed.", float64(s.PromptTokens))
	counter(vllmmetric.GenerationTokensTotal, "Number of generation tokens processed.", float64(s.GenerationTokens))
	family(vllmmetric.RequestSuccessTotal, "counter", "Count of successfully processed requests.")
	for _, reason := range []string{FinishStop, FinishLength, FinishAbort} {
		sample(vllmmetric.RequestSuccessTotal, fmt.Sprintf(`%s=%q`, vllmmetric.LabelFinishedReason, reason), float64(s.Success[reason]))
	}
	histogram(vllmmetric.RequestPromptTokens, "Number of prefill tokens processed.", s.RequestPromptTokens)
	histogram(vllmmetric.RequestGenerationTokens, "Number of generation tokens processed.", s.RequestGenerationTokens)
	histogram(vllmmetric.IterationTokensTotal, "Histogram of number of tokens per engine_step.", s.IterationTokens)
	histogram(vllmmetric.TimeToFirstToken, "Histogram of time to first token in seconds.", s.TTFT)
	histogram(vllmmetric.InterTokenLatency, "Histogram of inter-token latency in seconds.", s.ITL)
	histogram(vllmmetric.E2ERequestLatency, "Histogram of e2e request latency in seconds.", s.E2E)
	histogram(vllmmetric.RequestQueueTime, "Histogram of time spent in WAITING phase for request.", s.QueueTime)

	if cfg.NumSpeculativeTokens > 0 {
		counter(vllmmetric.SpecDecodeNumDrafts, "Number of spec decoding drafts.", float64(s.SpecDrafts))
		counter(vllmmetric.SpecDecodeNumDraftTokens, "Number of draft tokens.", float64(s.SpecDraftTokens))
		counter(vllmmetric.SpecDecodeNumAcceptedTokens, "Number of accepted tokens.", float64(s.SpecAccepted))
		family(vllmmetric.SpecDecodeNumAcceptedTokensPerPos, "counter", "Accepted tokens per draft position.")
		for p, n := range s.SpecAcceptedPerPos {
			sample(vllmmetric.SpecDecodeNumAcceptedTokensPerPos, fmt.Sprintf(`%s="%d"`, vllmmetric.LabelPosition, p), float64(n))
		}
	}
	family(vllmmetric.CacheConfigInfo, "gauge", "Information of the LLMEngine CacheConfig")
	k, _ := cfg.Capacity()
	info := []string{
		fmt.Sprintf(`block_size=%q`, strconv.Itoa(cfg.BlockSize)),
		`cache_dtype="auto"`,
		fmt.Sprintf(`enable_prefix_caching=%q`, pyBool(cfg.EnablePrefixCaching)),
		fmt.Sprintf(`gpu_memory_utilization=%q`, strconv.FormatFloat(cfg.GPUMemoryUtilization, 'f', -1, 64)),
		fmt.Sprintf(`num_gpu_blocks=%q`, strconv.Itoa(k.NumBlocks)),
		fmt.Sprintf(`num_gpu_blocks_override=%q`, pyOptInt(cfg.NumGPUBlocksOverride)),
		`prefix_caching_hash_algo="sha256"`,
	}
	fmt.Fprintf(bw, "%s{%s,engine=\"0\"} 1.0\n", vllmmetric.CacheConfigInfo, strings.Join(info, ","))
	return bw.Flush()
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func pyOptInt(n int) string {
	if n <= 0 {
		return "None"
	}
	return strconv.Itoa(n)
}

// formatFloat prints like Python's prometheus_client: integers with ".0".
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
